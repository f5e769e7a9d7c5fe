import numpy as np
import pytest

from particles import addition, modular_addition


def test_modular_addition_unordered():
    ds = modular_addition(17)
    assert len(ds) == 17 * 18 // 2
    assert np.all(ds.pairs[:, 0] <= ds.pairs[:, 1])
    assert np.array_equal(ds.labels, ds.pairs.sum(axis=1) % 17)
    assert ds.n_classes == 17


def test_modular_addition_ordered():
    ds = modular_addition(7, ordered=True)
    assert len(ds) == 49
    assert len({tuple(p) for p in ds.pairs}) == 49


def test_addition_labels():
    ds = addition(10)
    assert len(ds) == 55
    assert ds.n_classes == 19
    assert np.array_equal(ds.labels, ds.pairs.sum(axis=1))


def test_split_is_seeded_and_disjoint():
    ds = modular_addition(17)
    tr1, va1 = ds.split(0.8, seed=3)
    tr2, va2 = ds.split(0.8, seed=3)
    tr3, _ = ds.split(0.8, seed=4)
    assert np.array_equal(tr1.indices, tr2.indices) and np.array_equal(va1.indices, va2.indices)
    assert not np.array_equal(tr1.indices, tr3.indices)
    assert len(tr1) == 122 and len(va1) == 31
    assert set(tr1.indices).isdisjoint(va1.indices)
    assert np.array_equal(tr1.pairs, ds.pairs[tr1.indices])


def test_split_generator_and_full():
    ds = modular_addition(5)
    tr, va = ds.split(1.0, seed=np.random.default_rng(0))
    assert len(tr) == len(ds) and len(va) == 0


@pytest.mark.parametrize("p", [1, 0, -3])
def test_bad_p(p):
    with pytest.raises(ValueError, match=r"p must be an int in \[2, "):
        modular_addition(p)
    with pytest.raises(ValueError, match=r"p must be an int in \[2, "):
        addition(p)


def test_p_type():
    with pytest.raises(TypeError, match="p must be an int"):
        modular_addition(5.0)


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5, float("nan")])
def test_bad_fraction(fraction):
    with pytest.raises(ValueError, match="fraction must be (in|a finite)"):
        modular_addition(5).split(fraction)


def test_empty_training_set():
    with pytest.raises(ValueError, match="empty training set"):
        modular_addition(3).split(0.01)


# --- issue 50: training-set files ---------------------------------------------------------------------------

def test_read_training_set_files_and_their_refusals(tmp_path):
    from particles.datasets import read_training_set

    pairs, labels = np.array([[0, 1], [2, 3]]), np.array([1, 5])
    np.savez(tmp_path / "t.npz", pairs=pairs, labels=labels)
    got = read_training_set(tmp_path / "t.npz")
    assert np.array_equal(got[0], pairs) and np.array_equal(got[1], labels)
    (tmp_path / "t.csv").write_text("a,b,label\n0,1,1\n2,3,5\n")
    got = read_training_set(tmp_path / "t.csv")
    assert np.array_equal(got[0], pairs) and np.array_equal(got[1], labels)
    (tmp_path / "w.csv").write_text("a,b,label\n1,2\n3,4\n5,6\n")  # rows of the wrong width are not reshaped
    with pytest.raises(ValueError, match="row 2 must hold three integers"):
        read_training_set(tmp_path / "w.csv")
    np.savez(tmp_path / "o.npz", pairs=np.array([object()], dtype=object), labels=labels)
    with pytest.raises(ValueError, match=r"--train: .*o\.npz.* not a readable \.npz"):
        read_training_set(tmp_path / "o.npz", name="--train")
    np.savez(tmp_path / "m.npz", pairs=pairs)
    with pytest.raises(ValueError, match=r"lacks the array\(s\) \['labels'\]"):
        read_training_set(tmp_path / "m.npz")
    (tmp_path / "t.txt").write_text("0 1 1")
    with pytest.raises(ValueError, match="must end in .npz"):
        read_training_set(tmp_path / "t.txt")
