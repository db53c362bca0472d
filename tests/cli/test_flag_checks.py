"""Bad flags are refused with one line before anything starts (final new-user trial)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pumice.cli.main import main


@pytest.mark.parametrize(("args", "message"), [
    (["up", "--nodes", "0"], "0 is not in the range x>=1"),
    (["up", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    (["up", "--dashboard-port", "-1"], "-1 is not in the range 0<=x<=65535"),
    (["up", "--no-dashboard", "--dashboard-port", "5"], "--no-dashboard and --dashboard-port contradict each other"),
    (["apiserver", "--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    # the Service ranges (trial 12 F-11): kube-apiserver's size limit, a usable port range, apart from Pods
    (["up", "--service-cluster-ip-range", "10.0.0.0/8"],
     "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"),
    (["apiserver", "--service-cluster-ip-range", "fd00::/112"], "fd00::/112: pumice allocates IPv4 cluster IPs only"),
    (["apiserver", "--service-node-port-range", "32767-30000"],
     "port range 32767-30000 must be within 1-65535 with the first port not after the last"),
    (["up", "--service-node-port-range", "many"], "unable to parse port range: many"),
    (["up", "--service-cluster-ip-range", "10.244.8.0/24"],
     "--service-cluster-ip-range 10.244.8.0/24 overlaps the Pod CIDR 10.244.0.0/16"),
    (["up", "--pod-cidr", "10.100.0.0/24"], "--service-cluster-ip-range 10.96.0.0/12 overlaps the Pod CIDR 10.100.0.0/24"),
    # the address the Endpoints default/kubernetes carry (trial 13 F-6)
    (["apiserver", "--advertise-address", "127.0.0.1"],
     "127.0.0.1: must be an IPv4 address that is neither loopback nor unspecified"),
    (["apiserver", "--advertise-address", "host.example"], "host.example is not an IP address"),
    (["up", "--advertise-address", "0.0.0.0"], "0.0.0.0: must be an IPv4 address that is neither loopback nor "
     "unspecified"),
    (["install", "--print", "--namespace", "Bad_NS!"], "a lowercase RFC 1123 label"),
    (["install", "--print", "--image", ""], "an image name is required"),
])
def test_bad_flags_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, [*args, *(["--data-dir", str(tmp_path / "d")] if args[0] == "up" else [])])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("command", ["up", "node-agent"])
@pytest.mark.parametrize(("args", "message"), [
    (["--pod-cidr", "10.0.0.0/33"],
     "Invalid value for '--pod-cidr': bad Pod CIDR '10.0.0.0/33': '10.0.0.0/33' does not appear to be an IPv4 or "
     "IPv6 network"),
    (["--pod-cidr", "fd00::/64"], "Invalid value for '--pod-cidr': Pod CIDR fd00::/64 must be an IPv4 network of at "
     "least 4 addresses"),
    (["--pod-cidr", "10.0.0.0/31"], "Invalid value for '--pod-cidr': Pod CIDR 10.0.0.0/31 must be an IPv4 network"),
    (["--bridge", "pumice-0123456789"], "Invalid value for '--bridge': bridge name 'pumice-0123456789' is longer "
     "than 15 characters"),
    (["--bridge", "a/b"], "Invalid value for '--bridge': bridge name 'a/b' is not a valid interface name"),
    # trial-10 F-9: accepted, then tracebacks and exit 1 (a kubelet reports int64 amounts only)
    (["--node-cpu", "1e400"], "Invalid value for '--node-cpu': '1e400' is more than a Node can have (at most "
     "9223372036854775807m cpu)"),
    (["--node-memory", "1e400"], "Invalid value for '--node-memory': '1e400' is more than a Node can have (at most "
     "9223372036854775807 bytes of memory)"),
    (["--node-cpu", "0"], "Invalid value for '--node-cpu': '0' is not a positive quantity"),
    (["--node-memory", "8Gb"], "Invalid value for '--node-memory': '8Gb' is not a positive quantity"),
])
def test_a_bad_pod_network_or_node_capacity_option_is_a_usage_error_before_anything_starts(tmp_path: Path, command: str,
                                                                           args: list[str], message: str) -> None:
    """Trial 9 F-6: ``pumice up --pod-cidr 10.0.0.0/33`` printed "pumice is up", then exited 1 with
    Python's ipaddress text, the option not named."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    where = (["--port", "0", "--dashboard-port", "0"] if command == "up" else ["--kubeconfig", str(kubeconfig)])
    result = CliRunner().invoke(main, [command, "--runtime", "simulated", *where, "--data-dir", str(tmp_path / "d"),
                                       *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "pumice is up" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "d").exists()


def test_webhook_names_the_certificate_files_it_cannot_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    result = CliRunner().invoke(main, ["webhook", "--kubeconfig", str(kubeconfig), "--tls-cert-file", str(bad),
                                       "--tls-private-key-file", str(bad)])
    assert result.exit_code == 1
    assert f"cannot use --tls-cert-file {bad}" in result.output


@pytest.mark.parametrize(("swap", "why"), [
    (True, "tls: found a certificate rather than a key in the PEM for the private key"),
    (False, "tls: private key does not match public key"),
])
def test_webhook_says_what_is_wrong_with_the_key_pair_in_gos_words(tmp_path: Path, swap: bool, why: str) -> None:
    # trial 11 F-11 h: a certificate given as the key printed OpenSSL's "[SSL] PEM lib (_ssl.c:3926)"
    import datetime as dt

    from pumice._util.tls import self_signed

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    cert, _ = self_signed("a", ["localhost"], now=now)
    _, other_key = self_signed("b", ["localhost"], now=now)
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(cert if swap else other_key)
    result = CliRunner().invoke(main, ["webhook", "--kubeconfig", str(kubeconfig), "--tls-cert-file",
                                       str(tmp_path / "tls.crt"), "--tls-private-key-file", str(tmp_path / "tls.key")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: cannot use --tls-cert-file {tmp_path / 'tls.crt'} with --tls-private-key-file "
        f"{tmp_path / 'tls.key'}: {why}"]


@pytest.mark.parametrize(("conf", "message"), [
    (None, "cannot read: No such file or directory"),
    ('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: no-such-plugin}]\n', "no-such-plugin"),
    ('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: wait-for-pods-ready\n'
     '    arguments: {waitForPodsReady.timeout: soon}\n', "waitForPodsReady.timeout: expected a number, got 'soon'"),
    ('actions: "enqueue, no-such-action"\ntiers:\n- plugins: [{name: gang}]\n', "no-such-action"),
    ("actions: [unclosed\n", "invalid YAML"),
])
def test_a_bad_scheduler_conf_is_refused_before_anything_starts(tmp_path: Path, conf: str | None, message: str) -> None:
    """Trial 3 finding 7: ``up`` printed "pumice is up" and the URLs before refusing the file."""
    path = tmp_path / "volcano-scheduler.conf"
    if conf is not None:
        path.write_text(conf)
    result = CliRunner().invoke(main, ["up", "--runtime", "simulated", "--port", "0", "--dashboard-port", "0",
                                       "--data-dir", str(tmp_path / "d"), "--scheduler-conf", str(path)])
    assert result.exit_code == 1, result.output
    out = result.output.strip()
    assert out.startswith("Error: bad --scheduler-conf: ") and "\n" not in out, out
    assert message in out
    assert "pumice is up" not in out
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("url", ["ftp://x", "localhost:9090/metrics", "http:///metrics"])
def test_dashboard_refuses_a_metrics_url_it_cannot_read(tmp_path: Path, url: str) -> None:
    # trial 11 F-11 h: ftp://x started the dashboard, which then logged a WARNING every few seconds
    result = CliRunner().invoke(main, ["dashboard", "--kubeconfig", str(tmp_path / "none"), "--metrics-url", url])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        f"Error: Invalid value for '--metrics-url': {url}: not an http or https URL")


@pytest.mark.parametrize(("args", "option"), [
    (["volcano", "session", "-f", "{missing}"], "'-f' / '--filename': Path"),
    (["volcano", "session", "-f", "{missing}", "--config", "{missing}"], "'-f' / '--filename': Path"),
    (["webhook", "--tls-cert-file", "{missing}", "--tls-private-key-file", "{missing}"], "'--tls-cert-file': File"),
    (["dashboard", "--scheduler-conf", "{missing}"], "'--scheduler-conf': File"),
    (["explain", "vcjob/x", "--scheduler-conf", "{missing}"], "'--scheduler-conf': File"),
    (["scheduler", "--scheduler-conf", "{missing}"], "'--scheduler-conf': File"),
    (["controller-manager", "--kubeconfig", "{missing}"], "'--kubeconfig': File"),
])
def test_a_file_option_naming_no_file_is_one_line(tmp_path: Path, args: list[str], option: str) -> None:
    # trial 11 F-11 h: click printed its usage, a --help hint and the error (simulate already said one line)
    missing = tmp_path / "nope"
    result = CliRunner().invoke(main, [a.format(missing=missing) for a in args])
    assert (result.exit_code, result.output.strip().splitlines()) == (
        2, [f"Error: Invalid value for {option} '{missing}' does not exist."])


def test_the_service_range_defaults_are_the_api_servers() -> None:
    from pumice.apiserver.servicealloc import NODE_PORT_RANGE, SERVICE_CLUSTER_IP_RANGE, parse_node_port_range
    from pumice.cli._serviceopts import DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_CIDR
    from pumice.cli.up import UpOptions

    assert DEFAULT_SERVICE_CIDR == SERVICE_CLUSTER_IP_RANGE == UpOptions().service_cluster_ip_range
    assert parse_node_port_range(DEFAULT_NODE_PORT_RANGE) == NODE_PORT_RANGE == UpOptions().service_node_port_range


@pytest.mark.parametrize(("args", "message"), [
    (["simulate", "--until", "-5"], "Invalid value for '--until'"),
    (["simulate", "--scale", "0"], "Invalid value for '--scale'"),
    (["simulate", "--sample", "-1"], "Invalid value for '--sample'"),
    (["simulate", "--seed", "abc"], "Invalid value for '--seed': 'abc' is not a valid integer."),
    (["simulate", "--period", "0"], "Invalid value for '--period'"),
    (["simulate", "--bogus"], "No such option '--bogus'"),
    (["volcano", "session", "--bogus"], "No such option '--bogus'"),
    (["--bogus"], "No such option '--bogus'"),
    (["nosuch"], "No such command 'nosuch'."),
])
def test_flags_click_refuses_are_one_line_too(tmp_path: Path, args: list[str], message: str) -> None:
    """Trial 14 F-3 nit: a flag click itself refuses was printed as click's usage line, a
    ``Try '... --help'`` hint and the error; README promises one line (``Error: ...``, exit 2)."""
    (tmp_path / "w.yaml").write_text("arrivals: []\n")
    (tmp_path / "n.yaml").write_text("nodes: []\n")
    files = ["--workload", str(tmp_path / "w.yaml"), "--nodes", str(tmp_path / "n.yaml")]
    result = CliRunner().invoke(main, [*args, *(files if args[0] == "simulate" else [])])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.output
