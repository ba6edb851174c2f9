import math

import pytest

from hebbnets.bench import format_table, ood_id_ratios, relative_to_best_baseline, sample_std, summarize


def _rec(model, split, seed, value, metric="mse", params=100):
    return {"task": "t", "model": model, "split": split, "seed": seed, "value": value, "metric": metric,
            "num_parameters": params}


def _records():
    vals = {  # model -> split -> per-seed values
        "vn": {"id": [1.0, 2.0, 4.0], "ood": [1.0, 1.0, 1.0]},
        "mlp": {"id": [2.0, 2.0, 2.0], "ood": [5.0, 6.0, 7.0]},
        "cnn": {"id": [3.0, 3.0, 3.0], "ood": [4.0, 4.0, 4.0]},
    }
    return [_rec(m, s, i, v) for m, d in vals.items() for s, vs in d.items() for i, v in enumerate(vs)]


def test_mean_and_sample_std_by_hand():
    rows = {(r["model"], r["split"]): r for r in summarize(_records())}
    vn_id = rows[("vn", "id")]
    assert vn_id["n"] == 3 and vn_id["mean"] == pytest.approx(7 / 3)
    # sample std: sqrt(((1-7/3)^2 + (2-7/3)^2 + (4-7/3)^2) / 2) = sqrt(7/3)
    assert vn_id["std"] == pytest.approx(math.sqrt(7 / 3))
    assert rows[("mlp", "ood")]["std"] == pytest.approx(1.0)
    assert rows[("cnn", "id")]["std"] == 0.0
    assert math.isnan(sample_std([3.0])) and sample_std([1.0, 3.0]) == pytest.approx(math.sqrt(2))


def test_ratios_by_hand():
    summary = summarize(_records())
    r = ood_id_ratios(summary)
    assert r["mlp"]["ood"] == pytest.approx(6.0 / 2.0)
    assert r["vn"]["ood"] == pytest.approx(1.0 / (7 / 3))
    rel = relative_to_best_baseline(summary, "vn")
    assert rel["ood"]["best_baseline"] == "cnn" and rel["ood"]["ratio"] == pytest.approx(1.0 / 4.0)
    assert rel["id"]["best_baseline"] == "mlp" and rel["id"]["ratio"] == pytest.approx((7 / 3) / 2.0)
    assert relative_to_best_baseline(summary, "absent") == {}


def test_accuracy_is_compared_as_error():
    recs = [_rec("vn", "id", 0, 0.9, "accuracy"), _rec("vn", "ood", 0, 0.8, "accuracy"),
            _rec("mlp", "id", 0, 0.9, "accuracy"), _rec("mlp", "ood", 0, 0.5, "accuracy")]
    summary = summarize(recs)
    assert ood_id_ratios(summary)["mlp"]["ood"] == pytest.approx(0.5 / 0.1)
    assert relative_to_best_baseline(summary)["ood"]["ratio"] == pytest.approx(0.2 / 0.5)


def test_table_mentions_every_model_and_split():
    text = format_table(summarize(_records()), title="demo")
    assert text.startswith("demo") and "2.33 ± 1.53" in text
    for word in ("vn", "mlp", "cnn", "OOD/ID", "best baseline cnn", "0.25"):
        assert word in text


def test_one_seed_rows_print_no_nan():
    recs = [_rec("vn", "id", 0, 0.5), _rec("vn", "ood", 0, 0.75), _rec("mlp", "id", 0, 1.0), _rec("mlp", "ood", 0, 4.0)]
    text = format_table(summarize(recs))
    assert "nan" not in text and " 0.5 " in text and "0.75" in text
