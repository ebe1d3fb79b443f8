"""h5_same.py A B: two job files hold the same objects, attributes and
values, but /Merge's time and command line.  Exit 0 when they do."""
import sys

import h5py
import numpy as np

SKIP = ("Merge Time", "Options")  # when, and the command line (-o)


def names(f):
    out = []
    f.visit(out.append)
    return sorted(out)


def main(pa, pb):
    a, b = h5py.File(pa, "r"), h5py.File(pb, "r")
    na, nb = names(a), names(b)
    assert na == nb, (set(na) ^ set(nb))
    for n in ["/"] + na:
        x, y = a[n], b[n]
        ka = sorted(k for k in x.attrs if k not in SKIP)
        kb = sorted(k for k in y.attrs if k not in SKIP)
        assert ka == kb, (n, ka, kb)
        for k in ka:
            assert np.array_equal(np.asarray(x.attrs[k]),
                                  np.asarray(y.attrs[k])), (n, k)
        if isinstance(x, h5py.Dataset):
            assert x.dtype == y.dtype and x.shape == y.shape, n
            assert np.array_equal(x[()], y[()]), n
    print("compared %d objects" % len(na))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
