"""Which cluster an offline command reads, and that it says so when it is not the user's live one.

``--kubeconfig`` and ``--context`` imply ``--from-cluster`` (kubectl's reading of them); beside ``--cluster``
they are refused in one line. A snapshot read from ``--cluster`` manifests or from the bundled example is
named on stderr, stdout unchanged (issue 47, part 3).
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner
from kubernetes.config import kube_config

from policy_scheduler.cli import main
from policy_scheduler.offline.examples import default_cluster_path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = str(ROOT / "examples" / "pods" / "web.yaml")
# Each offline command that reads a cluster, with its own arguments.
COMMANDS = {
    "simulate": ["simulate"],
    "explain": ["explain", "default/analytics-inmem"],
    "capacity": ["capacity", TEMPLATE],
    "compare": ["compare", "DefaultProvider", "ClusterAutoscalerProvider"],
}
BUNDLED = (f"cluster: the bundled example {default_cluster_path()} (no --cluster, --kubeconfig or --from-cluster "
           f"given)\n")


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


@pytest.fixture
def broken_kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig that cannot be read: the command must fail reading it, not simulate the example."""
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nclusters: [\n")
    return path


@pytest.fixture
def unreachable_kubeconfig(tmp_path: Path) -> Path:
    """A valid kubeconfig whose API server is a closed port of this machine."""
    path = tmp_path / "unreachable-kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "here",
        "clusters": [{"name": "closed", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "here", "context": {"cluster": "closed", "user": "me"}}],
    }))
    return path


@pytest.mark.parametrize("command", list(COMMANDS))
def test_kubeconfig_without_from_cluster_reads_that_cluster(command, broken_kubeconfig):
    result = run(*COMMANDS[command], "--kubeconfig", str(broken_kubeconfig), "-o", "json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"error: {broken_kubeconfig}: invalid YAML: unexpected end of the file at line 3, column 1\n"


def test_a_broken_default_kubeconfig_is_named(broken_kubeconfig, monkeypatch):
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", f"/nonexistent/config:{broken_kubeconfig}")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    result = run("simulate", "--from-cluster")
    assert result.exit_code == 2, result.output
    assert result.output == f"error: {broken_kubeconfig}: invalid YAML: unexpected end of the file at line 3, column 1\n"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_kubeconfig_of_an_unreachable_server_fails_listing_it(command, unreachable_kubeconfig):
    result = run(*COMMANDS[command], "--kubeconfig", str(unreachable_kubeconfig))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: listing Nodes from https://127.0.0.1:1: "), result.stderr


@pytest.mark.parametrize("command", list(COMMANDS))
def test_context_without_from_cluster_reads_that_cluster(command, unreachable_kubeconfig, monkeypatch):
    # The client reads $KUBECONFIG once, on import: the default kubeconfig it fell back to.
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(unreachable_kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    result = run(*COMMANDS[command], "--context", "elsewhere")
    assert result.exit_code == 2, result.output
    assert result.stderr == ("error: cannot load a Kubernetes client configuration: Invalid kube-config file. "
                             f"Expected object with name elsewhere in {unreachable_kubeconfig}/contexts list\n")


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("live", [["--kubeconfig", "kc"], ["--context", "c"], ["--from-cluster"],
                                  ["--kubeconfig", "kc", "--context", "c"]])
def test_a_live_cluster_and_cluster_files_are_refused_in_one_line(command, live):
    result = run(*COMMANDS[command], *live, "--cluster", str(default_cluster_path()))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"error: {live[0]} reads a live cluster; it cannot be combined with --cluster FILE|DIR\n"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_bundled_example_is_named_on_stderr_stdout_unchanged(command):
    implicit = run(*COMMANDS[command], "-o", "json")
    explicit = run(*COMMANDS[command], "-o", "json", "--cluster", str(default_cluster_path()))
    assert implicit.exit_code == explicit.exit_code == 0, implicit.output
    assert implicit.stderr == BUNDLED
    assert explicit.stderr == f"cluster: the manifests of --cluster {default_cluster_path()}\n"
    assert implicit.stdout == explicit.stdout and implicit.stdout.startswith("{")


def test_every_cluster_file_is_named(tmp_path):
    nodes, pods = tmp_path / "nodes.yaml", tmp_path / "pods"
    nodes.write_bytes((default_cluster_path() / "nodes.yaml").read_bytes())
    pods.mkdir()
    (pods / "pending.yaml").write_bytes((default_cluster_path() / "pending-pods.yaml").read_bytes())
    result = run("simulate", "--cluster", str(nodes), "--cluster", str(pods))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"cluster: the manifests of --cluster {nodes}, {pods}\n"


def test_an_error_stays_one_line(tmp_path):
    result = run("explain", "default/not-there")
    assert result.exit_code == 2
    assert result.output == "error: pod default/not-there is not in the snapshot\n"


def test_help_says_kubeconfig_and_context_imply_from_cluster():
    for command in ("simulate", "explain", "capacity", "compare"):
        helps = {p.name: p.help for p in main.commands[command].params if isinstance(p, click.Option)}
        assert helps["kubeconfig"] == ("Read the snapshot from the live cluster of this kubeconfig file (implies "
                                       "--from-cluster; not with --cluster).")
        assert helps["context"] == ("The kubeconfig context whose live cluster to read (implies --from-cluster; not "
                                    "with --cluster).")


def test_migrate_refuses_a_kubeconfig_without_a_configmap(broken_kubeconfig):
    """migrate's --kubeconfig reads a ConfigMap; alone it would quietly migrate the default provider."""
    result = run("migrate", "--kubeconfig", str(broken_kubeconfig))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == ("error: --kubeconfig reads the Policy of a live cluster's ConfigMap: give --policy-configmap "
                             "NAME too (or drop --kubeconfig to migrate --policy-config-file or --algorithm-provider)\n")
