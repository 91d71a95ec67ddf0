"""benchmarks/report_size.py runs (at a tiny size; its figures are for benchmarks/README.md, never asserted)."""

from __future__ import annotations

import json

import pytest

from benchmarks import report_size


def test_report_size_script_small(tmp_path, capsys):
    assert report_size.main(["--nodes", "12", "--pods", "30", "--capacity-max", "20", "--out", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["command"] for line in lines] == ["simulate", "explain", "capacity", "compare"]
    for line in lines:
        assert line["html_bytes"] > 0 and line["json_bytes"] > 0
        assert (tmp_path / f"report-{line['command']}-n12-p30.html").is_file()
        assert (tmp_path / f"result-{line['command']}-n12-p30.json").is_file()


def test_width_needs_the_browser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        report_size.main(["--nodes", "12", "--pods", "30", "--width", "1280"])
    assert exit_info.value.code == 2 and "--width needs --browser" in capsys.readouterr().err
