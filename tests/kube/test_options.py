"""The daemon's configuration: kube-scheduler 1.9 flags and the ``--config`` file (``cli.md``)."""

from __future__ import annotations

import json
import logging
import textwrap

import click
import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.errors import UserError
from policy_scheduler.kube.config.flags import RUN_CONTEXT_SETTINGS, run_flags
from policy_scheduler.kube.config.gosyntax import (
    format_go_duration,
    parse_go_bool,
    parse_go_duration,
    split_host_port,
)
from policy_scheduler.kube.config.options import (
    DEFAULT_FAILURE_DOMAINS,
    DEPRECATION_WARNING,
    FLAG_NAMES,
    AlgorithmSourceConfig,
    ClientConnection,
    ConfigFileError,
    LeaderElectionConfiguration,
    SchedulerConfiguration,
    configuration_from_flags,
    load_config_file,
    resolve_configuration,
)
from policy_scheduler.kube.config.serving_options import (
    SERVING_FLAG_NAMES,
    ServingOptions,
    serving_options_from_flags,
)

HEADER = "apiVersion: componentconfig/v1alpha1\nkind: KubeSchedulerConfiguration\n"

# cli.md §5
EXAMPLE = HEADER + textwrap.dedent("""\
    schedulerName: default-scheduler
    algorithmSource:
      policy:
        configMap:
          namespace: kube-system
          name: scheduler-policy
    hardPodAffinitySymmetricWeight: 1
    leaderElection:
      leaderElect: true
      leaseDuration: 15s
      renewDeadline: 10s
      retryPeriod: 2s
      resourceLock: endpoints
      lockObjectNamespace: kube-system
      lockObjectName: kube-scheduler
    clientConnection:
      kubeconfig: /etc/kubernetes/scheduler.conf
      contentType: application/vnd.kubernetes.protobuf
      qps: 50
      burst: 100
    healthzBindAddress: 0.0.0.0:10251
    metricsBindAddress: 0.0.0.0:10251
    enableProfiling: false
    enableContentionProfiling: false
""")


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "sched.yaml") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


# --------------------------------------------------------------------------------------------------
# Go syntaxes


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15), ("1m30s", 90), ("1h", 3600), ("500ms", 0.5), ("1.5s", 1.5), ("2us", 2e-6), ("3µs", 3e-6),
        ("3μs", 3e-6), ("10ns", 1e-8), ("-1s", -1), ("+5s", 5), ("0", 0), ("-0", 0), (".5s", 0.5), ("1.s", 1),
        ("1h2m3.5s", 3723.5), ("0s", 0),
    ],
)
def test_parse_go_duration(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("abc", 'time: invalid duration "abc"'),
        ("-", 'time: invalid duration "-"'),
        (".s", 'time: invalid duration ".s"'),
        (" 1s", 'time: invalid duration " 1s"'),
        ("5", 'time: missing unit in duration "5"'),
        ("1s5", 'time: missing unit in duration "1s5"'),
        ("5x", 'time: unknown unit "x" in duration "5x"'),
        ("15 s", 'time: unknown unit " s" in duration "15 s"'),
        ("3µx", 'time: unknown unit "\\xc2\\xb5x" in duration "3\\xc2\\xb5x"'),
        ("a\nb", 'time: invalid duration "a\\x0ab"'),
        ("9999999999h", 'time: invalid duration "9999999999h"'),
    ],
)
def test_parse_go_duration_errors(text, message):
    with pytest.raises(UserError) as excinfo:
        parse_go_duration(text)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (1.5, "1.5s"), (0, "0s"), (1e-8, "10ns"),
        (1.5e-6, "1.5µs"), (-90, "-1m30s"), (7261.25, "2h1m1.25s"), (60, "1m0s"),
    ],
)
def test_format_go_duration(seconds, text):
    assert format_go_duration(seconds) == text
    assert parse_go_duration(text) == pytest.approx(seconds)


def test_parse_go_bool():
    assert all(parse_go_bool(text) for text in ("1", "t", "T", "TRUE", "true", "True"))
    assert not any(parse_go_bool(text) for text in ("0", "f", "F", "FALSE", "false", "False"))
    with pytest.raises(UserError, match=r'^strconv.ParseBool: parsing "yes": invalid syntax$'):
        parse_go_bool("yes")


@pytest.mark.parametrize(
    ("address", "expected"),
    [("0.0.0.0:10251", ("0.0.0.0", 10251)), (":80", ("", 80)), ("[::1]:8080", ("::1", 8080)),
     ("localhost:0", ("localhost", 0))],
)
def test_split_host_port(address, expected):
    assert split_host_port(address) == expected


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("", "missing port in address"),
        ("10251", "address 10251: missing port in address"),
        ("::1:80", "address ::1:80: too many colons in address"),
        ("[::1", "address [::1: missing ']' in address"),
        ("[::1]", "address [::1]: missing port in address"),
        ("a]:1", "address a]:1: unexpected ']' in address"),
        ("0.0.0.0:abc", "address 0.0.0.0:abc: invalid port"),
        ("0.0.0.0:70000", "address 0.0.0.0:70000: invalid port"),
    ],
)
def test_split_host_port_errors(address, message):
    with pytest.raises(UserError) as excinfo:
        split_host_port(address)
    assert str(excinfo.value) == message


# --------------------------------------------------------------------------------------------------
# Defaults and the configz shape


def test_defaults():
    config = SchedulerConfiguration()
    assert config.scheduler_name == "default-scheduler"
    assert config.algorithm_source == AlgorithmSourceConfig(provider="DefaultProvider")
    assert config.hard_pod_affinity_symmetric_weight == 1
    assert config.leader_election == LeaderElectionConfiguration(
        leader_elect=True, lease_duration=15, renew_deadline=10, retry_period=2, resource_lock="endpoints",
        lock_object_namespace="kube-system", lock_object_name="kube-scheduler",
    )
    assert config.client_connection == ClientConnection(
        kubeconfig="", accept_content_types="", content_type="application/vnd.kubernetes.protobuf", qps=50,
        burst=100,
    )
    assert config.healthz_bind_address == config.metrics_bind_address == ""  # the insecure port is off
    assert not config.enable_profiling and not config.enable_contention_profiling
    assert config.failure_domains == (
        "kubernetes.io/hostname,failure-domain.beta.kubernetes.io/zone,failure-domain.beta.kubernetes.io/region"
    )
    assert config.master == ""


def test_to_configz_of_the_defaults():
    assert SchedulerConfiguration().to_configz() == {
        "apiVersion": "componentconfig/v1alpha1",
        "kind": "KubeSchedulerConfiguration",
        "schedulerName": "default-scheduler",
        "algorithmSource": {"provider": "DefaultProvider"},
        "hardPodAffinitySymmetricWeight": 1,
        "leaderElection": {
            "leaderElect": True, "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s",
            "resourceLock": "endpoints", "lockObjectNamespace": "kube-system", "lockObjectName": "kube-scheduler",
        },
        "clientConnection": {
            "kubeconfig": "", "acceptContentTypes": "", "contentType": "application/vnd.kubernetes.protobuf",
            "qps": 50, "burst": 100,
        },
        "healthzBindAddress": "",
        "metricsBindAddress": "",
        "enableProfiling": False,
        "enableContentionProfiling": False,
        "failureDomains": DEFAULT_FAILURE_DOMAINS,
        "schedulingQueue": "1.9",
    }


def test_to_configz_of_policy_sources():
    file_source = SchedulerConfiguration(algorithm_source=AlgorithmSourceConfig(policy_file="/p.json"))
    assert file_source.to_configz()["algorithmSource"] == {"policy": {"file": {"path": "/p.json"}}}
    configmap = AlgorithmSourceConfig(policy_configmap_namespace="ns", policy_configmap_name="cm")
    assert SchedulerConfiguration(algorithm_source=configmap).to_configz()["algorithmSource"] == {
        "policy": {"configMap": {"namespace": "ns", "name": "cm"}}
    }
    fractional = SchedulerConfiguration(client_connection=ClientConnection(qps=2.5))
    assert fractional.to_configz()["clientConnection"]["qps"] == 2.5


# --------------------------------------------------------------------------------------------------
# The --config file


def test_full_example(write):
    config = load_config_file(write(EXAMPLE))
    assert config == SchedulerConfiguration(
        algorithm_source=AlgorithmSourceConfig(policy_configmap_namespace="kube-system",
                                               policy_configmap_name="scheduler-policy"),
        client_connection=ClientConnection(kubeconfig="/etc/kubernetes/scheduler.conf"),
        healthz_bind_address="0.0.0.0:10251", metrics_bind_address="0.0.0.0:10251",  # given: the insecure port
    )
    expected = yaml.safe_load(EXAMPLE)
    expected["clientConnection"]["acceptContentTypes"] = ""
    expected["failureDomains"] = DEFAULT_FAILURE_DOMAINS
    expected["schedulingQueue"] = "1.9"
    assert config.to_configz() == expected


def test_to_configz_round_trips(write):
    config = SchedulerConfiguration(
        scheduler_name="mine",
        algorithm_source=AlgorithmSourceConfig(policy_file="/etc/policy.json"),
        hard_pod_affinity_symmetric_weight=7,
        leader_election=LeaderElectionConfiguration(False, 90, 30.5, 0.25, "configmaps", "ns", "lock"),
        client_connection=ClientConnection("/kc", "application/json", "application/json", 12.5, 7),
        healthz_bind_address="127.0.0.1:1", metrics_bind_address="[::1]:2",
        enable_profiling=True, enable_contention_profiling=True, failure_domains="zone",
        scheduling_queue="three-queue",
    )
    assert load_config_file(write(json.dumps(config.to_configz()), "c.json")) == config


def test_minimal_file_gives_the_defaults(write):
    assert load_config_file(write(HEADER)) == SchedulerConfiguration()


def test_zero_values_are_defaulted(write):
    path = write(HEADER + textwrap.dedent("""\
        schedulerName: ""
        hardPodAffinitySymmetricWeight: 0
        leaderElection: {leaseDuration: 0s, renewDeadline: "0", retryPeriod: 0ms, resourceLock: "",
                         lockObjectNamespace: "", lockObjectName: ""}
        clientConnection: {contentType: "", qps: 0, burst: 0}
        healthzBindAddress: ""
        metricsBindAddress: ""
        failureDomains: ""
        algorithmSource: {provider: ""}
    """))
    assert load_config_file(path) == SchedulerConfiguration()


@pytest.mark.parametrize(
    ("given", "effective"),
    [("", ""), ("garbage", "0.0.0.0:10251"), (":8080", "0.0.0.0:8080"),
     ("127.0.0.1:1", "127.0.0.1:1"), ("[::]:9", "[::]:9"), ("0.0.0.0:abc", "0.0.0.0:abc")],
)
def test_bind_address_defaulting(write, given, effective):
    config = load_config_file(write(HEADER + f"healthzBindAddress: {json.dumps(given)}\n"
                                             f"metricsBindAddress: {json.dumps(given)}\n"))
    assert config.healthz_bind_address == config.metrics_bind_address == effective


def test_nulls_are_absent_and_leader_elect_null_is_true(write):
    path = write(HEADER + "schedulerName: null\nleaderElection: {leaderElect: null}\nclientConnection: null\n")
    assert load_config_file(path) == SchedulerConfiguration()
    assert load_config_file(write(HEADER + "leaderElection: {leaderElect: false}\n")).leader_election.leader_elect is False


def test_json_file_and_case_insensitive_keys(write):
    document = {"APIVERSION": "componentconfig/v1alpha1", "Kind": "KubeSchedulerConfiguration",
                "schedulername": "x", "LeaderElection": {"LEASEDURATION": "1m"}}
    config = load_config_file(write(json.dumps(document), "c.json"))
    assert config.scheduler_name == "x"
    assert config.leader_election.lease_duration == 60


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{}", AlgorithmSourceConfig(provider="DefaultProvider")),
        ("{provider: ClusterAutoscalerProvider}", AlgorithmSourceConfig(provider="ClusterAutoscalerProvider")),
        ("{policy: {file: {path: /p.json}}}", AlgorithmSourceConfig(policy_file="/p.json")),
        ("{policy: {configMap: {name: cm}}}",
         AlgorithmSourceConfig(policy_configmap_namespace="kube-system", policy_configmap_name="cm")),
        ("{policy: {configMap: {namespace: ns, name: cm}}}",
         AlgorithmSourceConfig(policy_configmap_namespace="ns", policy_configmap_name="cm")),
        ('{provider: "", policy: {file: {path: /p.json}}}', AlgorithmSourceConfig(policy_file="/p.json")),
        # 1.9: the provider is checked first
        ("{provider: DefaultProvider, policy: {file: {path: /p.json}}}",
         AlgorithmSourceConfig(provider="DefaultProvider")),
        ("{policy: {file: {path: /p.json}, configMap: {name: cm}}}", AlgorithmSourceConfig(policy_file="/p.json")),
    ],
)
def test_algorithm_source(write, source, expected):
    assert load_config_file(write(HEADER + f"algorithmSource: {source}\n")).algorithm_source == expected


def test_policy_without_file_or_configmap(write):
    path = write(HEADER + "algorithmSource: {policy: {}}\n")
    with pytest.raises(ConfigFileError, match=r"sched.yaml: algorithmSource.policy: neither file nor configMap"):
        load_config_file(path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("leaderElection: {leaseDuration: abc}", 'leaderElection.leaseDuration: time: invalid duration "abc"'),
        ("leaderElection: {retryPeriod: 5}", "leaderElection.retryPeriod: expected a duration string, got 5"),
        ("leaderElection: {renewDeadline: 5}", "leaderElection.renewDeadline: expected a duration string, got 5"),
        ("leaderElection: {leaderElect: 'yes'}", "leaderElection.leaderElect: expected a boolean, got 'yes'"),
        ("leaderElection: {resourceLock: 1}", "leaderElection.resourceLock: expected a string, got 1"),
        ("leaderElection: [1]", "leaderElection: expected an object, got [1]"),
        ("clientConnection: {qps: fast}", "clientConnection.qps: expected a number, got 'fast'"),
        ("clientConnection: {qps: true}", "clientConnection.qps: expected a number, got true"),
        ("clientConnection: {qps: .nan}", "clientConnection.qps: expected a number, got NaN"),
        ("clientConnection: {burst: 1.5}", "clientConnection.burst: expected an integer, got 1.5"),
        ("clientConnection: {burst: 3000000000}", "clientConnection.burst: expected a 32-bit integer, got 3000000000"),
        ("clientConnection: {kubeconfig: [a]}", 'clientConnection.kubeconfig: expected a string, got ["a"]'),
        ("clientConnection: 'x'", "clientConnection: expected an object, got 'x'"),
        ("hardPodAffinitySymmetricWeight: '2'", "hardPodAffinitySymmetricWeight: expected an integer, got '2'"),
        ("hardPodAffinitySymmetricWeight: true", "hardPodAffinitySymmetricWeight: expected an integer, got true"),
        ("schedulerName: {a: 1}", 'schedulerName: expected a string, got {"a": 1}'),
        ("healthzBindAddress: 10251", "healthzBindAddress: expected a string, got 10251"),
        ("enableProfiling: 1", "enableProfiling: expected a boolean, got 1"),
        ("enableContentionProfiling: 'true'", "enableContentionProfiling: expected a boolean, got 'true'"),
        ("failureDomains: false", "failureDomains: expected a string, got false"),
        ("schedulingQueue: 3", "schedulingQueue: expected a string, got 3"),
        ("schedulingQueue: three", 'schedulingQueue: "three" is not one of 1.9, three-queue'),
        ("algorithmSource: {provider: 1}", "algorithmSource.provider: expected a string, got 1"),
        ("algorithmSource: {policy: {file: {path: 1}}}", "algorithmSource.policy.file.path: expected a string, got 1"),
        ("algorithmSource: {policy: {configMap: {name: [x]}}}",
         'algorithmSource.policy.configMap.name: expected a string, got ["x"]'),
        ("algorithmSource: {policy: file}", "algorithmSource.policy: expected an object, got 'file'"),
    ],
)
def test_wrong_types_name_file_and_path(write, body, message):
    path = write(HEADER + body + "\n")
    with pytest.raises(ConfigFileError) as excinfo:
        load_config_file(path)
    assert str(excinfo.value) == f"{path}: {message}"
    assert "\n" not in str(excinfo.value)


def test_unknown_fields_warn(write, caplog):
    path = write(HEADER + "bogus: 1\nleaderElection: {leaseDuration: 20s, extra: x}\n"
                          "algorithmSource: {policy: {file: {path: /p, other: 1}}}\n")
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.config.options"):
        config = load_config_file(path)
    assert config.leader_election.lease_duration == 20
    warnings = [record.getMessage() for record in caplog.records]
    assert f"{path}: unknown field bogus ignored" in warnings
    assert f"{path}: unknown field leaderElection.extra ignored" in warnings
    assert f"{path}: unknown field algorithmSource.policy.file.other ignored" in warnings


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("apiVersion: x\nkind: KubeSchedulerConfiguration\n", 'apiVersion: "x" is not componentconfig/v1alpha1'),
        ("apiVersion: componentconfig/v1alpha2\nkind: KubeSchedulerConfiguration\n",
         'apiVersion: "componentconfig/v1alpha2" is not componentconfig/v1alpha1'),
        ("apiVersion: componentconfig/v1alpha1\nkind: Policy\n", 'kind: "Policy" is not KubeSchedulerConfiguration'),
        ("kind: KubeSchedulerConfiguration\n", "apiVersion: missing, expected componentconfig/v1alpha1"),
        ("apiVersion: componentconfig/v1alpha1\n", "kind: missing, expected KubeSchedulerConfiguration"),
        ("apiVersion: 1\nkind: KubeSchedulerConfiguration\n", "apiVersion: expected a string, got 1"),
    ],
)
def test_api_version_and_kind(write, head, message):
    path = write(head + "schedulerName: x\n")
    with pytest.raises(ConfigFileError) as excinfo:
        load_config_file(path)
    assert str(excinfo.value) == f"{path}: {message}"


def test_unreadable_files(write, tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigFileError, match=r"nope.yaml: no such file$"):
        load_config_file(missing)
    with pytest.raises(ConfigFileError, match=r": Is a directory$"):
        load_config_file(str(tmp_path))
    for text, pattern in [
        ("a: [1\n", r"^.*bad.yaml: invalid YAML: unexpected end of the file at line 2, column 1 \(in the \[\.\.\.\] "
                     r"list that starts at line 1, column 4\)$"),
        ("kind: KubeSchedulerConfiguration\nalgorithmSource:\n  provider: DefaultProvider\n provider: X\n",
         r"^.*bad.yaml: invalid YAML: bad indentation at line 4, column 2 \(in the mapping that starts at line 1, "
         r"column 1\)$"),
        ("", r"bad.yaml: empty configuration file$"),
        ("- 1\n", r"bad.yaml: expected a KubeSchedulerConfiguration object, got \[1\]$"),
    ]:
        with pytest.raises(ConfigFileError, match=pattern) as excinfo:
            load_config_file(write(text, "bad.yaml"))
        assert "\n" not in str(excinfo.value)
    bad_json = write('{"kind": "KubeSchedulerConfiguration" "algorithmSource": {}}', "bad.json")
    with pytest.raises(ConfigFileError) as excinfo:
        load_config_file(bad_json)
    assert str(excinfo.value) == f"{bad_json}: invalid JSON: Expecting ',' delimiter at line 1, column 39"
    (tmp_path / "latin1.yaml").write_bytes(b"schedulerName: \xe9\n")
    with pytest.raises(ConfigFileError, match=r"latin1.yaml: not UTF-8 text"):
        load_config_file(str(tmp_path / "latin1.yaml"))


# --------------------------------------------------------------------------------------------------
# The deprecated flags


def test_no_flags_give_the_defaults_and_the_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.config.options"):
        assert configuration_from_flags() == SchedulerConfiguration()
    assert [record.getMessage() for record in caplog.records] == [DEPRECATION_WARNING]
    assert DEPRECATION_WARNING == "WARNING: all flags than --config are deprecated. Please begin using a config file ASAP."


def test_flags_overwrite_fields():
    config = configuration_from_flags(
        kubeconfig="/kc", master="https://m", scheduler_name="s", hard_pod_affinity_symmetric_weight=5,
        leader_elect=False, leader_elect_lease_duration="1m", leader_elect_renew_deadline="30s",
        leader_elect_retry_period="500ms", leader_elect_resource_lock="configmaps", lock_object_namespace="ns",
        lock_object_name="lock", kube_api_qps=5.5, kube_api_burst=9, kube_api_content_type="application/json",
        profiling=True, contention_profiling="true", failure_domains="zone", feature_gates="PodPriority=true",
        config="",
    )
    assert config == SchedulerConfiguration(
        scheduler_name="s", hard_pod_affinity_symmetric_weight=5,
        leader_election=LeaderElectionConfiguration(False, 60, 30, 0.5, "configmaps", "ns", "lock"),
        client_connection=ClientConnection("/kc", "", "application/json", 5.5, 9),
        enable_profiling=True, enable_contention_profiling=True, failure_domains="zone", master="https://m",
    )


def test_flag_values_are_not_defaulted_again():
    """1.9 applies flags after defaulting: an explicit empty value stays empty."""
    assert configuration_from_flags(scheduler_name="").scheduler_name == ""
    assert configuration_from_flags(hard_pod_affinity_symmetric_weight=0).hard_pod_affinity_symmetric_weight == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"leader_elect_lease_duration": "abc"},
         'invalid argument "abc" for "--leader-elect-lease-duration" flag: time: invalid duration "abc"'),
        ({"leader_elect_retry_period": "2"},
         'invalid argument "2" for "--leader-elect-retry-period" flag: time: missing unit in duration "2"'),
        ({"leader_elect": "yes"},
         'invalid argument "yes" for "--leader-elect" flag: strconv.ParseBool: parsing "yes": invalid syntax'),
    ],
)
def test_bad_flag_values(flags, message):
    with pytest.raises(UserError) as excinfo:
        configuration_from_flags(**flags)
    assert str(excinfo.value) == message


def test_unknown_flag_keyword():
    with pytest.raises(TypeError, match="lock_name"):
        configuration_from_flags(lock_name="x")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, AlgorithmSourceConfig(provider="DefaultProvider")),
        ({"algorithm_provider": ""}, AlgorithmSourceConfig(provider="DefaultProvider")),
        ({"algorithm_provider": "ClusterAutoscalerProvider"}, AlgorithmSourceConfig(provider="ClusterAutoscalerProvider")),
        # 1.10 rule: a policy file without --use-legacy-policy-config is used when no ConfigMap is given
        ({"policy_config_file": "/p.json", "algorithm_provider": "X"}, AlgorithmSourceConfig(policy_file="/p.json")),
        ({"policy_config_file": "/p.json", "policy_configmap": "cm"},
         AlgorithmSourceConfig(policy_configmap_namespace="kube-system", policy_configmap_name="cm")),
        ({"policy_config_file": "/p.json", "policy_configmap": "cm", "use_legacy_policy_config": True},
         AlgorithmSourceConfig(policy_file="/p.json")),
        # 1.9: --use-legacy-policy-config alone selects the (empty) file: start-up fails later
        ({"use_legacy_policy_config": True, "algorithm_provider": "X"}, AlgorithmSourceConfig(policy_file="")),
        ({"policy_configmap": "cm", "policy_configmap_namespace": "ns"},
         AlgorithmSourceConfig(policy_configmap_namespace="ns", policy_configmap_name="cm")),
        # deviation: an empty namespace means kube-system (1.9 left it empty)
        ({"policy_configmap": "cm", "policy_configmap_namespace": ""},
         AlgorithmSourceConfig(policy_configmap_namespace="kube-system", policy_configmap_name="cm")),
        ({"policy_configmap": "cm", "algorithm_provider": "X"},
         AlgorithmSourceConfig(policy_configmap_namespace="kube-system", policy_configmap_name="cm")),
    ],
)
def test_flags_algorithm_source(flags, expected):
    assert configuration_from_flags(**flags).algorithm_source == expected


@pytest.mark.parametrize(
    ("flags", "healthz"),
    [
        ({}, ""),  # the insecure port is off unless --port is given
        ({"port": 8080}, "0.0.0.0:8080"),
        ({"port": 10251}, "0.0.0.0:10251"),
        ({"address": "127.0.0.1"}, ""),  # (a warning: --address has no effect without --port)
        ({"address": "127.0.0.1", "port": 0}, "127.0.0.1:0"),
        ({"address": "::1", "port": 9}, "[::1]:9"),
        ({"port": -1}, ""),  # 1.10: metrics disabled too
        ({"address": "127.0.0.1", "port": -1}, ""),
    ],
)
def test_flags_bind_addresses(flags, healthz):
    config = configuration_from_flags(**flags)
    assert config.healthz_bind_address == config.metrics_bind_address == healthz


# --------------------------------------------------------------------------------------------------
# resolve_configuration


def test_config_file_ignores_other_flags_except_master(write, caplog):
    path = write(EXAMPLE)
    flags = {"config": path, "master": "https://m:6443", "scheduler_name": "other", "port": 1, "leader_elect": False,
             "algorithm_provider": "X", "kubeconfig": "/other", "v": 3}
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.config.options"):
        config = resolve_configuration(flags)
    expected = load_config_file(path)
    expected.master = "https://m:6443"
    assert config == expected
    assert DEPRECATION_WARNING not in [record.getMessage() for record in caplog.records]


def test_resolve_without_config_uses_the_flags(caplog):
    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.config.options"):
        config = resolve_configuration({"config": "", "scheduler_name": "s", "port": -1, "unrelated": 1})
    assert config.scheduler_name == "s" and config.healthz_bind_address == ""
    assert DEPRECATION_WARNING in [record.getMessage() for record in caplog.records]


@pytest.mark.parametrize("weight", [0, -1, 101])
def test_hard_pod_affinity_weight_range(write, weight):
    message = f"invalid hardPodAffinitySymmetricWeight: {weight}, must be in the range 1-100"
    with pytest.raises(UserError, match=f"^{message}$"):
        resolve_configuration({"hard_pod_affinity_symmetric_weight": weight})
    if weight:  # 0 in a file means "default": 1
        with pytest.raises(UserError, match=f"^{message}$"):
            resolve_configuration({"config": write(HEADER + f"hardPodAffinitySymmetricWeight: {weight}\n")})


def test_hard_pod_affinity_weight_is_left_to_the_policy():
    """A non-zero Policy weight replaces the configured one; the factory checks the final value."""
    config = resolve_configuration({"hard_pod_affinity_symmetric_weight": 0, "policy_config_file": "/p.json"})
    assert config.hard_pod_affinity_symmetric_weight == 0
    assert resolve_configuration({"hard_pod_affinity_symmetric_weight": 100}).hard_pod_affinity_symmetric_weight == 100


def test_resource_lock(write):
    for lock in ("endpoints", "configmaps", "leases"):
        assert resolve_configuration({"leader_elect_resource_lock": lock}).leader_election.resource_lock == lock
    with pytest.raises(UserError, match=r"^couldn't create resource lock: Invalid lock-type pods$"):
        resolve_configuration({"leader_elect_resource_lock": "pods"})
    with pytest.raises(UserError, match=r"^couldn't create resource lock: Invalid lock-type x$"):
        resolve_configuration({"config": write(HEADER + "leaderElection: {resourceLock: x}\n")})


def test_invalid_bind_addresses(write):
    with pytest.raises(UserError) as excinfo:
        resolve_configuration({"port": 70000})
    assert str(excinfo.value) == 'invalid healthz bind address "0.0.0.0:70000": address 0.0.0.0:70000: invalid port'
    path = write(HEADER + "metricsBindAddress: 0.0.0.0:http\n")
    with pytest.raises(UserError) as excinfo:
        resolve_configuration({"config": path})
    assert str(excinfo.value) == 'invalid metrics bind address "0.0.0.0:http": address 0.0.0.0:http: invalid port'


# --------------------------------------------------------------------------------------------------
# click


@click.command(context_settings=RUN_CONTEXT_SETTINGS)
@run_flags
def _run(**flags):
    click.echo(json.dumps(flags))


def _nineteen(flags: dict) -> dict:
    """The 1.9 flags among ``run``'s (without the serving flags)."""
    return {name: value for name, value in flags.items() if name in FLAG_NAMES}


def _invoke(*args: str) -> dict:
    result = CliRunner().invoke(_run, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_click_defaults_are_the_configuration_defaults():
    flags = _invoke()
    assert set(flags) == set(FLAG_NAMES) | set(SERVING_FLAG_NAMES) and len(FLAG_NAMES) == 26
    assert flags["leader_elect"] is True and flags["profiling"] is False
    assert configuration_from_flags(**_nineteen(flags)) == SchedulerConfiguration()
    assert resolve_configuration(flags) == SchedulerConfiguration()
    assert serving_options_from_flags(flags) == ServingOptions()  # (the serving flags: upstream's defaults)


@pytest.mark.parametrize(
    ("args", "value"),
    [((), True), (("--leader-elect",), True), (("--leader-elect=false",), False), (("--leader-elect=true",), True),
     (("--leader-elect=0",), False), (("--leader-elect=F",), False), (("--leader_elect=False",), False),
     (("--leader-elect", "--port=1"), True)],
)
def test_bool_flag_syntaxes(args, value):
    assert _invoke(*args)["leader_elect"] is value


@pytest.mark.parametrize("name", ["use-legacy-policy-config", "profiling", "contention-profiling"])
def test_other_bool_flags(name):
    key = name.replace("-", "_")
    assert _invoke()[key] is False
    assert _invoke(f"--{name}")[key] is True
    assert _invoke(f"--{name}=true", f"--{name}=false")[key] is False


def test_bad_bool_value():
    result = CliRunner().invoke(_run, ["--profiling=yes"])
    assert result.exit_code == 2
    assert 'strconv.ParseBool: parsing "yes": invalid syntax' in result.output


@pytest.mark.parametrize(
    "args",
    [("--lock_object_name=x",), ("--lock-object-name", "x"), ("--lock-object-name=x",), ("--lock_object_name", "x")],
)
def test_underscores_and_value_syntaxes(args):
    assert _invoke(*args)["lock_object_name"] == "x"


def test_typed_flags():
    flags = _invoke("--port=-1", "--kube-api-qps", "2.5", "--kube_api_burst=7", "--leader-elect-lease-duration=1m")
    assert (flags["port"], flags["kube_api_qps"], flags["kube_api_burst"]) == (-1, 2.5, 7)
    config = configuration_from_flags(**_nineteen(flags))
    assert config.healthz_bind_address == config.metrics_bind_address == ""
    assert config.leader_election.lease_duration == 60
    result = CliRunner().invoke(_run, ["--port=99999999999"])
    assert result.exit_code == 2 and "value out of range" in result.output


def test_deprecated_flags_print_a_notice_and_are_hidden():
    runner = CliRunner()
    result = runner.invoke(_run, ["--hard-pod-affinity-symmetric-weight=2", "--failure_domains=zone"])
    assert result.exit_code == 0
    assert result.stderr.splitlines() == [
        "Flag --hard-pod-affinity-symmetric-weight has been deprecated, This option was moved to the policy "
        "configuration file",
        "Flag --failure-domains has been deprecated, Doesn't have any effect. Will be removed in future version.",
    ]
    assert json.loads(result.stdout)["hard_pod_affinity_symmetric_weight"] == 2
    assert runner.invoke(_run, []).stderr == ""
    help_text = runner.invoke(_run, ["--help"]).output
    assert "--failure-domains" not in help_text and "--hard-pod-affinity" not in help_text
    assert "--leader-elect-lease-duration duration" in help_text and "--feature-gates" in help_text
