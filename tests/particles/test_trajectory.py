import json
import os
import warnings
import zipfile

import numpy as np
import pytest

from particles import Trajectory, TrajectoryFormatError


def _traj():
    rng = np.random.default_rng(0)
    return Trajectory(rng.standard_normal((3, 5, 2)), [0, 10, 20], steps=[0, 5, 10, 15, 20],
                      signals=rng.random((5, 2)), scalars={"train_loss": rng.random(5)},
                      meta={"source": "test", "p": 5})


def test_round_trip(tmp_path):
    t = _traj()
    path = t.save(tmp_path / "run.npz")
    back = Trajectory.load(path)
    np.testing.assert_array_equal(back.embeddings, t.embeddings)
    np.testing.assert_array_equal(back.steps, t.steps)
    np.testing.assert_array_equal(back.snapshot_steps, t.snapshot_steps)
    np.testing.assert_array_equal(back.signals, t.signals)
    np.testing.assert_array_equal(back.scalars["train_loss"], t.scalars["train_loss"])
    assert back.meta == t.meta
    assert [f for f in os.listdir(tmp_path)] == ["run.npz"]  # no temporary left behind


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    t = _traj()
    t.save(tmp_path / "run.npz")
    before = (tmp_path / "run.npz").read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        t.save(tmp_path / "run.npz")
    assert (tmp_path / "run.npz").read_bytes() == before
    assert os.listdir(tmp_path) == ["run.npz"]


def test_particle_trajectory_round_trip(tmp_path, train17):
    from particles import ForceParams, simulate
    traj = simulate(np.random.default_rng(1).standard_normal((17, 2)), train17, ForceParams(), steps=20, dt=0.01)
    back = Trajectory.load(traj.save(tmp_path / "p.npz"))
    np.testing.assert_array_equal(back.energy, traj.energy)
    assert back.meta["params"] == traj.meta["params"]


def _write(path, **arrays):
    np.savez(path, **arrays)
    return path


def _good_arrays():
    return dict(schema_version=np.array(1), steps=np.arange(2), snapshot_steps=np.arange(2),
                embeddings=np.zeros((2, 3, 2)), meta=np.array(json.dumps({"source": "x"})))


@pytest.mark.parametrize("change, field", [
    (dict(embeddings=np.zeros((2, 3))), "embeddings"),
    (dict(embeddings=np.full((2, 3, 2), np.nan)), "embeddings"),
    (dict(snapshot_steps=np.arange(3)), "snapshot_steps"),
    (dict(snapshot_steps=np.array([1, 0])), "snapshot_steps"),
    (dict(steps=np.array([0.5, 1.0])), "steps"),
    (dict(meta=np.array("{not json")), "meta"),
    (dict(meta=np.array(3)), "meta"),
    (dict(schema_version=np.array(99)), "schema_version"),
    (dict(signals=np.zeros((3, 2))), "signals"),
    (dict(scalar_energy=np.zeros(5)), "scalar_energy"),
    (dict(junk=np.zeros(2)), "junk"),
])
def test_bad_file_names_field(tmp_path, change, field):
    arrays = _good_arrays()
    arrays.update(change)
    path = _write(tmp_path / "bad.npz", **arrays)
    with pytest.raises(TrajectoryFormatError, match=f"'{field}'") as info:
        Trajectory.load(path)
    assert info.value.field == field


@pytest.mark.parametrize("missing", ["embeddings", "meta", "schema_version", "snapshot_steps"])
def test_missing_field(tmp_path, missing):
    arrays = _good_arrays()
    del arrays[missing]
    with pytest.raises(TrajectoryFormatError, match=f"'{missing}'.*missing"):
        Trajectory.load(_write(tmp_path / "bad.npz", **arrays))


def test_not_an_archive(tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(b"hello")
    with pytest.raises(TrajectoryFormatError, match="'file'"):
        Trajectory.load(path)


def test_pickled_array_refused(tmp_path):
    arrays = _good_arrays()
    arrays["embeddings"] = np.array([object()] * 12, dtype=object).reshape(2, 3, 2)
    path = tmp_path / "p.npz"
    np.savez(path, **arrays)
    with pytest.raises(TrajectoryFormatError):
        Trajectory.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        Trajectory.load(tmp_path / "none.npz")


def test_save_needs_npz_suffix(tmp_path):
    with pytest.raises(ValueError, match=".npz"):
        _traj().save(tmp_path / "run.dat")


def test_meta_must_be_json():
    with pytest.raises(TrajectoryFormatError, match="'meta'"):
        Trajectory(np.zeros((1, 2, 2)), [0], meta={"x": object()})


def test_snapshot_arrays_round_trip_and_validate(tmp_path):
    import numpy as np
    import pytest

    from particles import Trajectory, TrajectoryFormatError

    rng = np.random.default_rng(0)
    traj = Trajectory(embeddings=rng.normal(size=(3, 5, 2)), snapshot_steps=[0, 5, 10],
                      snapshot_arrays={"sequence_embedding": rng.normal(size=(3, 7, 2))})
    loaded = Trajectory.load(traj.save(tmp_path / "t.npz"))
    np.testing.assert_array_equal(loaded.snapshot_arrays["sequence_embedding"],
                                  traj.snapshot_arrays["sequence_embedding"])
    with pytest.raises(TrajectoryFormatError, match="snapshot_probe.*2 entries for 3 snapshots"):
        Trajectory(embeddings=rng.normal(size=(3, 5, 2)), snapshot_steps=[0, 5, 10],
                   snapshot_arrays={"probe": np.zeros((2, 4))})
    with pytest.raises(TrajectoryFormatError, match="snapshot_probe.*non-finite"):
        Trajectory(embeddings=rng.normal(size=(3, 5, 2)), snapshot_steps=[0, 5, 10],
                   snapshot_arrays={"probe": np.full((3, 4), np.nan)})


@pytest.mark.parametrize("compress", [True, False])
def test_every_flipped_byte_is_refused_or_harmless(tmp_path, compress):
    """Flip one byte at positions across the whole file: each load either
    raises TrajectoryFormatError or (a byte zip does not check, such as a
    timestamp) returns the same trajectory; nothing else escapes."""
    good = _traj()
    path = tmp_path / "t.npz"
    good.save(path, compress=compress)
    data = path.read_bytes()
    refused = 0
    for pos in range(0, len(data), max(1, len(data) // 150)):
        bad = bytearray(data)
        bad[pos] ^= 0xFF
        path.write_bytes(bytes(bad))
        try:
            loaded = Trajectory.load(path)
        except TrajectoryFormatError:
            refused += 1
            continue
        assert np.array_equal(loaded.embeddings, good.embeddings) and loaded.meta == good.meta
    assert refused > 100


def test_npy_under_an_npz_name_is_refused(tmp_path):
    path = tmp_path / "x.npz"
    with open(path, "wb") as fh:
        np.save(fh, np.zeros((3, 5, 2)))
    with pytest.raises(TrajectoryFormatError, match="'file'.*single array"):
        Trajectory.load(path)


def test_header_larger_than_the_data_is_refused_before_allocating(tmp_path):
    """A member whose header declares (10^6, 10^4, 10) floats (745 GiB)."""
    arrays = _good_arrays()
    path = tmp_path / "big.npz"
    np.savez(path, **arrays)
    with zipfile.ZipFile(path) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    raw = members["embeddings.npy"]
    header_end = raw.index(b"\n") + 1
    header = raw[:header_end].decode("latin1")
    start = header.index("'shape': (") + len("'shape': (")
    end = header.index(")", start)
    new_header = (header[:start] + "1000000, 10000, 10" + header[end:]).rstrip()
    assert len(new_header) < len(header)  # fits in the header's padding
    new_header = new_header.ljust(len(header) - 1) + "\n"
    members["embeddings.npy"] = new_header.encode("latin1") + raw[header_end:]
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    with pytest.raises(TrajectoryFormatError, match="'embeddings'.*header declares shape"):
        Trajectory.load(path)


def test_killed_saves_leave_no_temporaries_behind(tmp_path):
    """Temporaries of a dead process (and legacy ones older than an hour) are
    removed by the next save in the folder; a live process's are kept."""
    import subprocess
    import sys
    import time
    from particles.core.io import remove_stale_temporaries
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".run.npz.{dead.pid}.abc12345.tmp"
    stale_by_name = tmp_path / f".anim.gif.{dead.pid}.abc12346.tmp.gif"
    alive = tmp_path / f".other.npz.{os.getppid()}.xyz78901.tmp"
    users = tmp_path / f".my.notes.{dead.pid}.v1.tmp.md"  # a user's hidden file, not one of ours
    legacy = tmp_path / ".old.npz.q1w2e3.tmp"
    recent_legacy = tmp_path / ".new.npz.r4t5y6.tmp"
    for f in (stale, stale_by_name, alive, legacy, recent_legacy, users):
        f.write_bytes(b"partial")
    old = time.time() - 7200
    os.utime(legacy, (old, old))
    _traj().save(tmp_path / "t.npz")
    assert not stale.exists() and not legacy.exists() and not stale_by_name.exists()
    assert alive.exists() and recent_legacy.exists()
    assert remove_stale_temporaries(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, recent_legacy.name, users.name, "t.npz"])


def test_atomic_write_by_name(tmp_path):
    """Writers that open the file themselves get a temporary name with the
    target's suffix; a failure leaves the earlier file and no temporary."""
    from particles.core.io import atomic_write
    seen = []

    def write(name):
        seen.append(name)
        with open(name, "wb") as fh:
            fh.write(b"first")

    atomic_write(tmp_path / "a.gif", write, by_name=True)
    assert seen[0].endswith(".gif") and (tmp_path / "a.gif").read_bytes() == b"first"

    def broken(name):
        with open(name, "wb") as fh:
            fh.write(b"part")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(tmp_path / "a.gif", broken, by_name=True)
    assert os.listdir(tmp_path) == ["a.gif"] and (tmp_path / "a.gif").read_bytes() == b"first"
    with pytest.raises(OSError, match="left .* empty"):  # a writer that wrote nothing (or elsewhere)
        atomic_write(tmp_path / "a.gif", lambda name: None, by_name=True)
    assert os.listdir(tmp_path) == ["a.gif"] and (tmp_path / "a.gif").read_bytes() == b"first"


def test_gradients_and_updates_round_trip_and_validate(tmp_path):
    rng = np.random.default_rng(0)
    E = rng.normal(size=(4, 7, 3))
    grads, upd = rng.normal(size=E.shape), rng.normal(size=E.shape)
    traj = Trajectory(E, np.arange(4) * 10, gradients=grads, updates=upd)
    back = Trajectory.load(traj.save(tmp_path / "g.npz"))
    assert np.array_equal(back.gradients, grads) and np.array_equal(back.updates, upd)
    plain = Trajectory.load(Trajectory(E, np.arange(4)).save(tmp_path / "plain.npz"))  # files without them load
    assert plain.gradients is None and plain.updates is None
    with pytest.raises(TrajectoryFormatError, match="gradients"):
        Trajectory(E, np.arange(4), gradients=grads[:, :3])
    with pytest.raises(TrajectoryFormatError, match="updates"):
        Trajectory(E, np.arange(4), updates=np.where(upd > 0, np.inf, upd))


# --- issue 50: the training set travels with the run --------------------------------------------------------

def test_the_training_set_round_trips_and_old_files_load(tmp_path):
    import particles as P

    data = P.modular_addition(7, ordered=True)
    train, _ = data.split(0.5, seed=0)
    traj = P.Trajectory(np.zeros((2, 7, 3)), [0, 5], meta={"task": "modular_addition"})
    assert traj.train is None
    old = traj.save(tmp_path / "old.npz")  # a file of the format before the field existed
    assert P.Trajectory.load(old).train is None
    with_train = traj.with_train(train)
    back = P.Trajectory.load(with_train.save(tmp_path / "new.npz"))
    assert np.array_equal(back.train.pairs, train.pairs) and np.array_equal(back.train.labels, train.labels)
    assert back.meta["n_train"] == len(train) and back.train.name == "modular_addition"
    # (pairs, labels) as plain lists work as well as a PairDataset
    assert len(traj.with_train((train.pairs.tolist(), train.labels.tolist())).train) == len(train)


def test_a_training_set_that_disagrees_with_the_run_is_refused_naming_it():
    import particles as P

    traj = P.Trajectory(np.zeros((2, 7, 3)), [0, 5], meta={"task": "modular_addition", "n_train": 3})
    pairs = np.array([[0, 1], [2, 3], [4, 6]])
    with pytest.raises(ValueError, match=r"train: pairs must hold token indices in 0..6"):
        traj.with_train((pairs + 1, (pairs + 1).sum(1) % 7))
    with pytest.raises(ValueError, match="1 of 3 labels disagree with the run's task 'modular_addition'"):
        traj.with_train((pairs, np.array([1, 5, 4])))
    with pytest.raises(ValueError, match="has 2 pairs where the run's metadata records 3"):
        traj.with_train((pairs[:2], pairs[:2].sum(1) % 7))
    with pytest.raises(TypeError, match="train must be a PairDataset or a"):
        traj.with_train(pairs)
    with pytest.raises(P.TrajectoryFormatError, match="train_labels"):
        P.Trajectory(np.zeros((2, 7, 3)), [0, 5], train_pairs=pairs)
    with pytest.raises(P.TrajectoryFormatError, match="train_pairs"):  # a file's damaged field names itself
        P.Trajectory(np.zeros((2, 7, 3)), [0, 5], train_pairs=pairs + 10, train_labels=np.zeros(3, int))
    assert traj.with_train((pairs, pairs.sum(1) % 7)).train.p == 7


# --- issue 54 (part): files that would load and then fail are refused at load ---------------------------------

def _raw_npz(path, **arrays):
    import json as _json

    base = {"schema_version": np.array(1), "snapshot_steps": np.array([0]), "embeddings": np.zeros((1, 5, 2)),
            "meta": np.array(_json.dumps({}))}
    base.update(arrays)
    np.savez(path, **base)
    return path


@pytest.mark.parametrize("arrays, field, words", [
    ({"snapshot_steps": np.zeros(0, int), "embeddings": np.zeros((0, 5, 2))}, "embeddings", "no snapshot"),
    ({"embeddings": np.zeros((1, 0, 2))}, "embeddings", "0 tokens"),
    ({"embeddings": np.zeros((1, 1, 2))}, "embeddings", "1 token"),
    ({"embeddings": np.zeros((1, 5, 0))}, "embeddings", "0 dimensions"),
    ({"embeddings": np.full((1, 5, 2), 1e308)}, "embeddings", "magnitude"),
    ({"meta": np.array("[" * 100000 + "]" * 100000)}, "meta", "nested 100000 levels"),
    ({"meta": np.array('{"a": ' + "[" * 65 + "]" * 65 + "}")}, "meta", "nested 66 levels"),
])
def test_damaged_files_are_refused_at_load_naming_the_field(tmp_path, arrays, field, words):
    import particles as P

    path = _raw_npz(tmp_path / "bad.npz", **arrays)
    with pytest.raises(P.TrajectoryFormatError, match=words) as info:
        P.Trajectory.load(path)
    assert info.value.field == field


def test_json_depth_skips_strings_and_nesting_at_the_limit_loads(tmp_path):
    import json as _json

    import particles as P
    from particles.core.io import MAX_JSON_DEPTH, json_depth

    assert json_depth('{"a": "[[[[{{{{", "b": [1, {"c": "\\\\"}]}') == 3
    nested = {"x": 1}
    for _ in range(MAX_JSON_DEPTH - 1):
        nested = {"x": nested}
    path = _raw_npz(tmp_path / "ok.npz", meta=np.array(_json.dumps(nested)))
    assert P.Trajectory.load(path).meta["x"]["x"]["x"]  # exactly the limit: read


def test_a_small_file_that_unpacks_large_is_refused_before_it_is_read(tmp_path):
    import json as _json
    import resource

    import particles as P

    path = tmp_path / "zeros.npz"  # float16 zeros declaring 256 MiB: a few hundred KB on disk
    np.savez_compressed(path, schema_version=np.array(1), snapshot_steps=np.arange(64),
                        embeddings=np.zeros((64, 2048, 1024), np.float16), meta=np.array(_json.dumps({})))
    assert path.stat().st_size < 2 << 20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(P.TrajectoryFormatError, match=r"would take 1280 MiB .* over the budget of 1024 MiB") as info:
        P.Trajectory.load(path, max_bytes=1 << 30)
    assert info.value.field == "file"
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    assert after - before < 64 * 1024  # refused from the headers: nothing near the 1.25 GiB was allocated
    with pytest.raises(ValueError, match="max_bytes"):
        P.Trajectory.load(path, max_bytes=0)


def test_an_os_error_while_saving_names_the_file_not_the_temporary(tmp_path, monkeypatch):
    import errno

    import particles as P
    import particles.core.io as io_module

    def refuse(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied", src)

    monkeypatch.setattr(io_module.os, "replace", refuse)
    with pytest.raises(PermissionError) as info:
        P.Trajectory(np.zeros((1, 3, 2)), [0]).save(tmp_path / "run.npz")
    assert str(tmp_path / "run.npz") in str(info.value) and ".tmp" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # no temporary left


@pytest.mark.parametrize("field", ["embeddings", "signals", "gradients"])
@pytest.mark.parametrize("dtype", ["m8[s]", "M8[s]", complex, object, "U3", bool])
def test_non_real_dtypes_are_refused_by_field(field, dtype):
    # timedelta64 is a NumPy integer subtype: it used to pass as numbers
    t = _traj()
    arrays = {"embeddings": t.embeddings, "signals": t.signals, "gradients": t.embeddings}
    arrays[field] = np.zeros(arrays[field].shape, dtype=dtype)
    with pytest.raises(TrajectoryFormatError, match=rf"'{field}': must hold real numbers .*got dtype") as info:
        Trajectory(arrays["embeddings"], t.snapshot_steps, steps=t.steps, signals=arrays["signals"],
                   gradients=arrays["gradients"])
    assert info.value.field == field
    assert np.dtype(dtype).str[1:] in str(info.value) or np.dtype(dtype).name in str(info.value)


def test_timedelta_steps_are_refused():
    with pytest.raises(TrajectoryFormatError, match="'snapshot_steps': must hold integers, got dtype timedelta64"):
        Trajectory(np.zeros((2, 3, 2)), np.array([0, 1], dtype="m8[s]"))


def test_duplicate_members_are_refused(tmp_path):
    path = _traj().save(tmp_path / "run.npz", compress=False)
    other = np.zeros((3, 5, 2))
    import io
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, other)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("embeddings.npy", buffer.getvalue())
    with pytest.raises(TrajectoryFormatError, match="'embeddings': appears more than once in .*duplicate zip members"):
        Trajectory.load(path)


@pytest.mark.parametrize("key, value, actual", [("p", 7, 5), ("d", 3, 2), ("p", 5.5, 5)])
def test_meta_contradicting_the_arrays_is_refused_at_load(tmp_path, key, value, actual):
    t = _traj()
    t.meta[key] = value  # in memory a partial or foreign trajectory is still accepted
    path = t.save(tmp_path / "run.npz")
    with pytest.raises(TrajectoryFormatError, match=rf"'meta': records {key} = {value} \(meta\['{key}'\]\) but the "
                                                    rf"embeddings \(3, 5, 2\) have {key} = {actual}"):
        Trajectory.load(path)


def test_meta_agreeing_with_the_arrays_loads(tmp_path):
    t = _traj()
    t.meta.update(p=5, d=2)
    assert Trajectory.load(t.save(tmp_path / "run.npz")).meta["d"] == 2
    t.meta.update(p="five")  # not a number: nothing to compare (fourier_signals ignores it too)
    assert Trajectory.load(t.save(tmp_path / "run.npz")).meta["p"] == "five"


def test_a_header_holding_an_expression_is_named_without_python_objects(tmp_path):
    """NumPy's header parser says "malformed node or string: <ast.Call object at 0x...>" for a header holding
    a call; the refusal names the field and shows no Python object (issue 69)."""
    import zipfile

    header = "{'descr': '<f8', 'fortran_order': False, 'shape': foo(3), }"
    header += " " * (108 - len(header)) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 24
    path = tmp_path / "expr.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("embeddings.npy", member)
    with pytest.raises(TrajectoryFormatError, match="'embeddings': has a damaged header") as caught:
        Trajectory.load(path)
    assert "object at 0x" not in str(caught.value) and "an expression" in str(caught.value)
