"""The HTTP extender client against the example extender on 127.0.0.1: the wire, the verbs, the errors
(with upstream 1.9's messages), TLS, and one connection reused for every call."""

from __future__ import annotations

import base64
import json
import time

import pytest

from benchmarks.harness.ports import free_port
from policy_scheduler.api.types import ExtenderConfig, ExtenderManagedResource, TLSConfig
from policy_scheduler.core.extender import ExtenderError
from policy_scheduler.core.http_extender import HTTPExtender, HTTPExtenderFactory
from policy_scheduler.errors import PolicyError
from policy_scheduler.kube.metrics import SchedulerMetrics

from .cluster import GPU, NODES, as_pod, cluster, pod


def _extender(url: str, **kw) -> HTTPExtender:
    kw.setdefault("filter_verb", "filter")
    kw.setdefault("prioritize_verb", "prioritize")
    kw.setdefault("weight", 3)
    return HTTPExtender(ExtenderConfig(url_prefix=url, **kw))


def _names(nodes) -> list[str]:
    return [n.name for n in nodes]


# -- filter / prioritize / the wire ---------------------------------------------------------------------
def test_filter_sends_full_nodes_and_keeps_the_cached_objects(server):
    state = cluster()
    ext = _extender(server.url)
    kept, failed = ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert _names(kept) == ["node-1", "node-2", "node-3"]
    assert failed == {"node-0": "node is under maintenance"}
    assert all(n is state.node_infos[n.name].node for n in kept)  # unchanged nodes: the cached objects
    verb, args = server.extender.requests[-1]
    assert verb == "filter"
    assert set(args) == {"pod", "nodes"}  # no "nodenames" key at all (omitempty)
    assert args["nodes"]["metadata"] == {}
    assert [n["metadata"]["name"] for n in args["nodes"]["items"]] == ["node-0", "node-1", "node-2", "node-3"]
    assert args["nodes"]["items"][1] == NODES[1]
    assert args["pod"]["metadata"]["name"] == "p"


def test_node_cache_capable_sends_names_only_and_maps_them_back(server):
    state = cluster()
    for raw in NODES:
        server.extender.nodes.add(raw)
    ext = _extender(server.url, node_cache_capable=True)
    kept, failed = ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert _names(kept) == ["node-1", "node-2", "node-3"]
    assert failed == {"node-0": "node is under maintenance"}
    assert all(n is state.node_infos[n.name].node for n in kept)
    _, args = server.extender.requests[-1]
    assert set(args) == {"pod", "nodenames"}
    assert args["nodenames"] == ["node-0", "node-1", "node-2", "node-3"]
    scores, weight = ext.prioritize(as_pod(pod("p")), kept)
    assert set(server.extender.requests[-1][1]) == {"pod", "nodenames"}
    assert [(h.host, h.score) for h in scores] == [("node-1", 2), ("node-2", 9), ("node-3", 5)]
    assert weight == 3


def test_node_cache_capable_with_nodes_in_the_reply_uses_them(server):
    """nodeCacheCapable but the reply has no nodenames: its nodes are used (extender.md §3)."""
    state = cluster()
    body = json.dumps({"nodes": {"items": [NODES[2]]}, "failedNodes": {}}).encode()
    server.extender.faults["filter"] = {"body": body}
    kept, _ = _extender(server.url, node_cache_capable=True).filter(as_pod(pod("p")), state.node_list(),
                                                                       state.node_infos)
    assert _names(kept) == ["node-2"]


def test_unknown_node_name_in_the_reply_is_an_error(server):
    state = cluster()
    server.extender.faults["filter"] = {"body": b'{"nodenames": ["node-1", "ghost"]}'}
    with pytest.raises(ExtenderError, match=f"extender {server.url} returned unknown node 'ghost'"):
        _extender(server.url, node_cache_capable=True).filter(as_pod(pod("p")), state.node_list(), state.node_infos)


def test_replies_are_decoded_case_insensitively(server):
    state = cluster()
    server.extender.faults["filter"] = {"body": b'{"NodeNames": ["node-2"], "FAILEDNODES": {"node-1": "no"}, "Error": ""}'}
    kept, failed = _extender(server.url, node_cache_capable=True).filter(as_pod(pod("p")), state.node_list(),
                                                                           state.node_infos)
    assert (_names(kept), failed) == (["node-2"], {"node-1": "no"})
    server.extender.faults["prioritize"] = {"body": b'[{"HOST": "node-2", "Score": 4}] trailing bytes are not read'}
    scores, _ = _extender(server.url).prioritize(as_pod(pod("p")), kept)
    assert [(h.host, h.score) for h in scores] == [("node-2", 4)]


def test_reply_without_nodes_leaves_no_candidate(server):
    state = cluster()
    server.extender.faults["filter"] = {"body": b'{"failedNodes": {"node-1": "busy"}}'}
    kept, failed = _extender(server.url).filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert (kept, failed) == ([], {"node-1": "busy"})


def test_url_prefix_trailing_slashes_and_verbs(server):
    state = cluster()
    ext = _extender(server.url + "//", filter_verb="filter")
    ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert server.extender.requests[-1][0] == "filter"


def test_verbs_not_configured_make_no_call(server):
    state = cluster()
    ext = HTTPExtender(ExtenderConfig(url_prefix=server.url))
    nodes = state.node_list()
    assert ext.filter(as_pod(pod("p")), nodes, state.node_infos) == (nodes, {})
    scores, weight = ext.prioritize(as_pod(pod("p")), nodes)
    assert weight == 0 and {h.score for h in scores} == {0}
    with pytest.raises(ExtenderError, match="^Unexpected empty bindVerb in extender$"):
        ext.bind(as_pod(pod("p")), "node-1")
    assert not server.extender.requests


# -- bind -----------------------------------------------------------------------------------------------
def test_bind_sends_capitalised_binding_args_and_reports_the_error_field(server):
    ext = HTTPExtender(ExtenderConfig(url_prefix=server.url, bind_verb="bind"))
    assert ext.is_binder()
    with pytest.raises(ExtenderError) as exc:  # the example has no API server here: it says so in "Error"
        ext.bind(as_pod(pod("web-1")), "node-2")
    assert str(exc.value) == "the example extender has no API server to bind with (start it with --kubeconfig)"
    verb, args = server.extender.requests[-1]
    assert verb == "bind"
    assert args == {"PodName": "web-1", "PodNamespace": "default", "PodUID": "uid-web-1", "Node": "node-2"}
    server.extender.faults["bind"] = {"body": b'{"error": ""}'}
    ext.bind(as_pod(pod("web-1")), "node-2")  # success


# -- errors ---------------------------------------------------------------------------------------------
def test_status_other_than_200(server):
    state = cluster()
    server.extender.faults["filter"] = {"status": 500}
    with pytest.raises(ExtenderError) as exc:
        _extender(server.url + "/").filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert str(exc.value) == f"Failed filter with extender at URL {server.url}/, code 500"


@pytest.mark.parametrize("body, message", [
    (b"", "EOF"),
    (b"not json", "invalid character 'o' in literal null (expecting 'u')"),
    (b"{nodes: 1}", "invalid character 'n' looking for beginning of object key string"),
    (b'{"nodenames": ["a"', "unexpected EOF"),
    (b'{"nodenames": "a"}', "json: cannot unmarshal string into Go struct field ExtenderFilterResult.nodenames "
                            "of type []string"),
    (b"[]", "json: cannot unmarshal array into Go value of type api.ExtenderFilterResult"),
    (b'{"error": 1}', "json: cannot unmarshal number 1 into Go struct field ExtenderFilterResult.error of type string"),
])
def test_malformed_filter_replies(server, body, message):
    state = cluster()
    server.extender.faults["filter"] = {"body": body}
    with pytest.raises(ExtenderError) as exc:
        _extender(server.url).filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    if body == b"not json":  # Go reads "n" as the start of null; we say where it broke
        assert str(exc.value).startswith("invalid character")
    else:
        assert str(exc.value) == message


def test_malformed_prioritize_reply(server):
    server.extender.faults["prioritize"] = {"body": b'[{"host": "node-1", "score": 2.5}]'}
    with pytest.raises(ExtenderError) as exc:
        _extender(server.url).prioritize(as_pod(pod("p")), cluster().node_list())
    assert str(exc.value) == "json: cannot unmarshal number 2.5 into Go struct field HostPriority.score of type int"


def test_error_field_fails_the_call_with_exactly_its_text(server):
    state = cluster()
    server.extender.faults["filter"] = {"body": b'{"nodenames": [], "error": "quota service down"}'}
    with pytest.raises(ExtenderError) as exc:
        _extender(server.url).filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert str(exc.value) == "quota service down"


def test_timeout(server):
    state = cluster()
    server.extender.faults["filter"] = {"sleep": 1.5}
    ext = _extender(server.url, http_timeout_ns=200_000_000)
    started = time.monotonic()
    with pytest.raises(ExtenderError) as exc:
        ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert time.monotonic() - started < 1.2
    assert str(exc.value) == (f"Post {server.url}/filter: net/http: request canceled "
                              "(Client.Timeout exceeded while awaiting headers)")


def test_connection_refused():
    port = free_port()
    state = cluster()
    with pytest.raises(ExtenderError) as exc:
        _extender(f"http://127.0.0.1:{port}/scheduler").filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert str(exc.value) == (f"Post http://127.0.0.1:{port}/scheduler/filter: "
                              f"dial tcp 127.0.0.1:{port}: getsockopt: connection refused")


def test_errors_are_counted_and_observed(server):
    metrics = SchedulerMetrics()
    factory = HTTPExtenderFactory(observer=metrics.observe_extender_error)
    ext = factory(ExtenderConfig(url_prefix=server.url, filter_verb="filter", prioritize_verb="prioritize",
                                 weight=1, ignorable=True))
    assert factory(ExtenderConfig(url_prefix=server.url, filter_verb="filter", prioritize_verb="prioritize",
                                  weight=1, ignorable=True)) is ext  # one client (one pool) per configuration
    server.extender.faults.update(filter={"status": 503}, prioritize={"status": 503})
    state = cluster()
    with pytest.raises(ExtenderError):
        ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    with pytest.raises(ExtenderError):
        ext.prioritize(as_pod(pod("p")), state.node_list())
    assert ext.stats.errors == {("filter", True): 1, ("prioritize", True): 1}
    text = metrics.exposition()[0].decode()
    assert f'scheduler_extender_errors_total{{extender="{server.url}",ignored="true",verb="filter"}} 1.0' in text


def test_one_connection_is_reused_for_every_call(server):
    state = cluster()
    ext = _extender(server.url)
    for i in range(20):
        kept, _ = ext.filter(as_pod(pod(f"p{i}")), state.node_list(), state.node_infos)
        ext.prioritize(as_pod(pod(f"p{i}")), kept)
    pools = [ext._http.connection_from_url(server.url)]
    assert pools[0].num_connections == 1
    assert ext.stats.calls == {"filter": 20, "prioritize": 20}


# -- managedResources -----------------------------------------------------------------------------------
def test_is_interested_in_pods_requesting_or_limiting_a_managed_resource():
    ext = HTTPExtender(ExtenderConfig(url_prefix="http://127.0.0.1:1", managed_resources=(
        ExtenderManagedResource(GPU),)))
    assert not ext.is_interested(as_pod(pod("plain")))
    assert ext.is_interested(as_pod(pod("gpu", gpus=1)))
    assert ext.is_interested(as_pod(pod("gpu-limit", gpus=1, limits_only=True)))
    init = pod("init")
    init["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {GPU: "1"}}}]
    assert ext.is_interested(as_pod(init))
    assert HTTPExtender(ExtenderConfig(url_prefix="http://x", managed_resources=())).is_interested(as_pod(pod("p")))


# -- TLS ------------------------------------------------------------------------------------------------
def test_https_with_the_ca_file(https_server, certs):
    state = cluster()
    ext = _extender(https_server.url, enable_https=True, tls_config=TLSConfig(ca_file=str(certs.ca)))
    kept, _ = ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert _names(kept) == ["node-1", "node-2", "node-3"]


def test_https_with_ca_data_and_server_name(https_server, certs):
    state = cluster()
    tls = TLSConfig(ca_data=certs.ca.read_bytes(), server_name="extender.example")
    ext = _extender(https_server.url, tls_config=tls)
    ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    wrong = _extender(https_server.url, tls_config=TLSConfig(ca_data=certs.ca.read_bytes(), server_name="other.example"))
    with pytest.raises(ExtenderError, match="certificate|hostname"):
        wrong.filter(as_pod(pod("p")), state.node_list(), state.node_infos)


def test_enable_https_without_a_ca_does_not_verify(https_server):
    """The 1.9 rule: enableHttps and no CAFile/CAData force Insecure."""
    state = cluster()
    ext = _extender(https_server.url, enable_https=True)
    kept, _ = ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)
    assert len(kept) == 3


def test_https_prefix_without_tls_options_verifies_against_system_roots(https_server):
    state = cluster()
    with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
        _extender(https_server.url).filter(as_pod(pod("p")), state.node_list(), state.node_infos)


def test_https_with_the_wrong_ca_fails(https_server, certs):
    state = cluster()
    ext = _extender(https_server.url, enable_https=True, tls_config=TLSConfig(ca_file=str(certs.other_ca)))
    with pytest.raises(ExtenderError, match=f"^Post {https_server.url}/filter: .*CERTIFICATE_VERIFY_FAILED"):
        ext.filter(as_pod(pod("p")), state.node_list(), state.node_infos)


def test_client_certificate_from_data_and_files(mtls_server, certs):
    state = cluster()
    with_data = TLSConfig(ca_file=str(certs.ca), cert_data=certs.client_cert.read_bytes(),
                          key_data=certs.client_key.read_bytes())
    with_files = TLSConfig(ca_file=str(certs.ca), cert_file=str(certs.client_cert), key_file=str(certs.client_key))
    for tls in (with_data, with_files):
        kept, _ = _extender(mtls_server.url, tls_config=tls).filter(as_pod(pod("p")), state.node_list(),
                                                                     state.node_infos)
        assert len(kept) == 3
    with pytest.raises(ExtenderError):
        _extender(mtls_server.url, tls_config=TLSConfig(ca_file=str(certs.ca))).filter(
            as_pod(pod("p")), state.node_list(), state.node_infos)


@pytest.mark.parametrize("tls, message", [
    (TLSConfig(ca_file="/nonexistent/ca.crt"), "open /nonexistent/ca.crt: no such file or directory"),
    (TLSConfig(cert_data=b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"),
     "tls: failed to find any PEM data in key input"),
    (TLSConfig(cert_data=b"garbage", key_data=b"garbage"), "tls: failed to find any PEM data in certificate input"),
    (TLSConfig(insecure=True, ca_data=b"x"),
     "specifying a root certificates file with the insecure flag is not allowed"),
])
def test_unusable_tls_settings_fail_when_the_extender_is_built(tls, message):
    with pytest.raises(PolicyError) as exc:
        HTTPExtender(ExtenderConfig(url_prefix="https://127.0.0.1:1", tls_config=tls))
    assert str(exc.value) == message


def test_tls_data_round_trips_through_a_policy(certs):
    from policy_scheduler.api import load_policy

    data = base64.b64encode(certs.ca.read_bytes()).decode()
    policy = load_policy(json.dumps({"apiVersion": "v1", "kind": "Policy", "extenders": [
        {"urlPrefix": "https://127.0.0.1:1", "tlsConfig": {"caData": data, "serverName": "extender.example"}}]}))
    assert policy.extenders[0].tls_config == TLSConfig(ca_data=certs.ca.read_bytes(), server_name="extender.example")
