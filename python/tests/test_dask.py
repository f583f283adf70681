"""polymage.dask on a distributed.LocalCluster of 2 worker processes: Harris, unsharp mask,
the RGB blur and pyramid blending over chunked dask arrays whose sizes are not multiples of
the chunks equal the interpreter's output bit for bit (window forms round floats as the
interpreter does); a whole-image reduction is refused by name; chunks smaller than the
halo are refused naming the minimum; the workers share one disk-cache folder; the halo
call against brute force (poisoned inputs outside the block)."""
import numpy as np
import pytest

import polymage as pm
from polymage import apps, filters

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import polymage.dask as pmd  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def reference(p, inputs, params):
    out = np.zeros(p.output_shapes(**params)[0], dtype=pm.dtype(p.outputs[0][1]))
    p.interpret(*inputs, out=out, **params)
    return out


CASES = [("harris", (47, 53)), ("unsharp_mask", (40, 56)), ("pyramid_blend", (64, 64))]


@pytest.mark.parametrize("name,chunk", CASES)
def test_apps_on_cluster(client, tmp_path, name, chunk):
    rows, cols = {"harris": (151, 173), "unsharp_mask": (133, 161),
                  "pyramid_blend": (150, 170)}[name]
    p = apps.build(name)
    params = apps.params(name, rows, cols)
    ins = apps.inputs(name, rows, cols)
    arrays = [da.from_array(a, chunks=a.shape[:-2] + chunk) for a in ins]
    out_rank = len(p.output_shapes(**params)[0])
    chunks = p.output_shapes(**params)[0][:out_rank - 2] + chunk
    got = pmd.map_pipeline(p, *arrays, chunks=chunks, cache_dir=str(tmp_path),
                           **params).compute()
    assert np.array_equal(got, reference(p, ins, params), equal_nan=True)


def test_blur_on_cluster(client, tmp_path):
    p = filters.blur_rgb()
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, size=(3, 101, 131), dtype=np.uint8)
    got = pmd.map_pipeline(p, da.from_array(img, chunks=(3, 30, 40)), cache_dir=str(tmp_path),
                           R=101, C=131).compute()
    assert np.array_equal(got, reference(p, [img], dict(R=101, C=131)))


def test_workers_share_the_disk_cache(client, tmp_path):
    p = filters.sobel()
    img = np.arange(90 * 70, dtype=np.uint8).reshape(90, 70)
    arr = da.from_array(img, chunks=(30, 35))
    pmd.map_pipeline(p, arr, cache_dir=str(tmp_path), R=90, C=70).compute()
    stats = client.run(lambda: [j.stats() for j in pmd._jits.values()])
    compiled = sum(s.get("sync_compiles", 0) for ws in stats.values() for s in ws)
    loaded = sum(s.get("disk_hits", 0) for ws in stats.values() for s in ws)
    assert compiled >= 1 and compiled + loaded >= 2, stats


def test_whole_image_reduction_refused():
    with pytest.raises(pm.UnsupportedError, match="cannot run on windows: stage (hist|cmin)"):
        pmd.map_pipeline(filters.hist_eq(), da.zeros((20, 20), dtype=np.uint8, chunks=10),
                         R=20, C=20)


def test_chunks_smaller_than_the_halo():
    p = apps.build("pyramid_blend")
    params = apps.params("pyramid_blend", 150, 170)
    ins = [da.zeros(a.shape, dtype=np.float32, chunks=a.shape[:-2] + (16, 16))
           for a in apps.inputs("pyramid_blend", 150, 170)]
    with pytest.raises(pm.ArgumentError, match="must be at least 59 points"):
        pmd.map_pipeline(p, *ins, chunks=(3, 16, 16), **params)


def test_halo_against_brute_force():
    """Inputs poisoned (NaN) outside the block leave the window right; the halo is the
    least that does: one point less along a side changes some window."""
    p = apps.harris()
    R, C = 30, 34
    params = dict(R=R - 2, C=C - 2)
    img = np.random.default_rng(1).random((R, C), dtype=np.float32)
    ref = reference(p, [img], params)
    (hlo0, hhi0), (hlo1, hhi1) = p.halo()
    assert (hlo0, hhi0, hlo1, hhi1) == (2, 2, 2, 2)
    k = pm.compile(p.window(), dict(params, window_lo0=0, window_n0=8, window_lo1=0,
                                    window_n1=8))
    ok_tight = False
    for lo0 in range(0, R - 8, 5):
        for lo1 in range(0, C - 8, 7):
            (o, e), = p.input_blocks((lo0, lo1), (8, 8), **params)
            assert o == (max(0, lo0 - hlo0), max(0, lo1 - hlo1))
            poisoned = np.full_like(img, np.nan)
            sl = tuple(slice(a, a + b) for a, b in zip(o, e))
            poisoned[sl] = img[sl]
            # the interpreter over the poisoned whole image: right inside the window
            got = reference(p, [poisoned], params)[lo0:lo0 + 8, lo1:lo1 + 8]
            assert np.array_equal(got, ref[lo0:lo0 + 8, lo1:lo1 + 8])
            assert np.array_equal(k.run_window(np.ascontiguousarray(img[sl]),
                                               offset=(lo0, lo1), shape=(8, 8), **params),
                                  ref[lo0:lo0 + 8, lo1:lo1 + 8])
            if lo0 >= 3 and lo1 >= 3:  # one point less of halo before the window
                tight = poisoned.copy()
                tight[o[0], :] = np.nan
                t = reference(p, [tight], params)[lo0:lo0 + 8, lo1:lo1 + 8]
                ok_tight |= not np.array_equal(t, ref[lo0:lo0 + 8, lo1:lo1 + 8],
                                               equal_nan=True)
    assert ok_tight


def test_chunk_interior_reads_the_chunk_in_place():
    """A chunk with an interior: one window over the input chunk itself (a Delayed of the
    chunk's key, no Dask-assembled block) and the frame's slabs, which tile the chunk
    exactly; a chunk smaller than twice the halo: one window over an assembled block."""
    p = apps.build("harris")
    params = apps.params("harris", 151, 173)
    a = pmd._Chunked(da.from_array(np.zeros((151, 173), np.float32), chunks=(47, 53)))
    parts = pmd._parts(p, params, [a], (47, 53), (47, 53))
    assert len(parts) == 5                    # the interior and four slabs
    assert not isinstance(parts[0][2][0][0], da.Array)
    assert all(isinstance(part[2][0][0], da.Array) for part in parts[1:])
    cover = np.zeros((47, 53), int)
    for (r, c), (nr, nc), _ in parts:
        cover[r - 47:r - 47 + nr, c - 53:c - 53 + nc] += 1
    assert (cover == 1).all()
    q = apps.build("pyramid_blend")
    qparams = apps.params("pyramid_blend", 150, 170)
    arrays = [pmd._Chunked(da.from_array(x, chunks=x.shape[:-2] + (64, 64)))
              for x in apps.inputs("pyramid_blend", 150, 170)]
    out_lead = tuple(q.output_shapes(**qparams)[0][:-2])
    whole = pmd._parts(q, qparams, arrays, (0,) * len(out_lead) + (64, 64),
                       out_lead + (64, 64))
    assert len(whole) == 1 and all(isinstance(b, da.Array) for b, _ in whole[0][2])
