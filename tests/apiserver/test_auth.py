"""Authentication and authorization: the admin token, a static token file, ServiceAccount tokens
from the TokenRequest subresource, RBAC, the review APIs, and real kubectl's ``auth can-i`` /
``auth whoami`` / ``create token`` against them."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from pumice._util.clock import FakeClock
from pumice.api import Obj
from pumice.apiserver.authn import Authenticator, ServiceAccountTokenIssuer, TokenFileError, load_token_file
from pumice.apiserver.authz import RBACAuthorizer, forbidden_message, request_attributes
from pumice.testing.cluster import HttpServer, serve_http
from pumice.testing.kubectl import kubectl_binary

TOKENS = 'alice-token,alice,1001,"dev,qa"\nbob-token,bob,1002\n# a comment\n'


# ------------------------------------------------------------------------------------ units

def test_token_file_lines_give_users_with_groups(tmp_path: Path) -> None:
    f = tmp_path / "tokens.csv"
    f.write_text(TOKENS)
    users = load_token_file(f)
    assert users["alice-token"].name == "alice"
    assert users["alice-token"].groups == ("dev", "qa", "system:authenticated")
    assert users["bob-token"].uid == "1002"


def test_token_file_with_too_few_columns_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "tokens.csv"
    f.write_text("tok,user\n")
    with pytest.raises(TokenFileError, match=r"tokens.csv:1: expected token,user,uid"):
        load_token_file(f)


def test_service_account_token_is_refused_after_expiry_or_when_its_pod_is_gone() -> None:
    clock = FakeClock()
    issuer = ServiceAccountTokenIssuer(None)
    objects: dict[tuple[str, str, str], Obj] = {
        ("serviceaccounts", "ns", "sa"): {"metadata": {"uid": "sa-uid"}},
        ("pods", "ns", "p"): {"metadata": {"uid": "pod-uid"}},
    }
    authn = Authenticator("admin", issuer=issuer, lookup=lambda k, ns, n: objects.get((k, ns, n)), now=clock.now)
    from pumice.apiserver.authn import BoundObject

    tok = issuer.issue(namespace="ns", name="sa", sa_uid="sa-uid", audiences=list(issuer.audiences), now=clock.now(),
                       expiration_seconds=600, bound=BoundObject("Pod", "p", "pod-uid"))
    user = authn.authenticate(tok)
    assert user is not None and user.name == "system:serviceaccount:ns:sa"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("p",)
    clock.advance(700)
    assert authn.authenticate(tok) is None  # expired (beyond the 60 s leeway)
    clock.advance(-700)
    del objects[("pods", "ns", "p")]
    assert authn.authenticate(tok) is None  # bound Pod deleted


def test_request_attributes_of_kubectl_requests() -> None:
    from pumice.apiserver.authn import ADMIN_USER

    a = request_attributes(ADMIN_USER, "GET", "/apis/apps/v1/namespaces/team/deployments", {"watch": "true"})
    assert (a.verb, a.api_group, a.resource, a.namespace) == ("watch", "apps", "deployments", "team")
    a = request_attributes(ADMIN_USER, "POST", "/api/v1/namespaces/team/pods/web/exec", {})
    assert (a.verb, a.resource, a.subresource, a.name) == ("create", "pods", "exec", "web")
    a = request_attributes(ADMIN_USER, "GET", "/api/v1/namespaces/team", {})
    assert (a.verb, a.resource, a.name, a.namespace) == ("get", "namespaces", "team", "team")
    a = request_attributes(ADMIN_USER, "GET", "/api/v1/pods", {"fieldSelector": "metadata.name=x"})
    assert (a.verb, a.name, a.namespace) == ("list", "x", "")
    a = request_attributes(ADMIN_USER, "GET", "/healthz", {})
    assert not a.resource_request and a.path == "/healthz"


def test_forbidden_message_is_kube_apiservers() -> None:
    from pumice.apiserver.authn import UserInfo

    a = request_attributes(UserInfo("bob"), "GET", "/api/v1/namespaces/default/pods", {})
    assert forbidden_message(a) == ('pods is forbidden: User "bob" cannot list resource "pods" in API group "" in '
                                    'the namespace "default"')
    a = request_attributes(UserInfo("bob"), "DELETE", "/apis/apps/v1/namespaces/x/deployments/web", {})
    assert forbidden_message(a) == ('deployments.apps "web" is forbidden: User "bob" cannot delete resource '
                                    '"deployments" in API group "apps" in the namespace "x"')
    a = request_attributes(UserInfo("bob"), "GET", "/api/v1/nodes", {})
    assert forbidden_message(a).endswith("at the cluster scope")


def test_rbac_rules_match_subresources_wildcards_and_names() -> None:
    from pumice.apiserver.authn import UserInfo

    role = {"metadata": {"name": "r", "namespace": "ns"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "*/status"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}]}
    binding = {"metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "robot"}]}
    store = {"rbac.authorization.k8s.io/roles": [role], "rbac.authorization.k8s.io/rolebindings": [binding]}
    authz = RBACAuthorizer(lambda res, ns: [o for o in store.get(res, []) if ns is None
                                            or o["metadata"].get("namespace") == ns],
                           lambda res, ns, n: next((o for o in store.get(res, []) if o["metadata"]["name"] == n), None))
    robot = UserInfo("system:serviceaccount:ns:robot")

    def allowed(method: str, path: str) -> bool:
        return authz.authorize(request_attributes(robot, method, path, {}))[0]

    assert allowed("GET", "/api/v1/namespaces/ns/pods/p")
    assert allowed("GET", "/api/v1/namespaces/ns/services/s/status")
    assert allowed("DELETE", "/apis/apps/v1/namespaces/ns/deployments/web")
    assert not allowed("DELETE", "/apis/apps/v1/namespaces/ns/deployments/other")
    assert not allowed("GET", "/api/v1/namespaces/other/pods/p")
    assert not allowed("DELETE", "/api/v1/namespaces/ns/pods/p")
    assert authz.authorize(request_attributes(robot, "GET", "/api/v1/namespaces/ns/pods/p", {}))[1] == \
        'RBAC: allowed by RoleBinding "b/ns" of Role "r/ns" to ServiceAccount "ns/robot"'


# ------------------------------------------------------------------------------------ over HTTPS

@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    d = tmp_path_factory.mktemp("auth")
    (d / "tokens.csv").write_text(TOKENS)
    with serve_http(d, token_auth_file=d / "tokens.csv") as s:
        yield s


def _http(srv: HttpServer, token: str) -> httpx2.Client:
    return httpx2.Client(base_url=srv.url, verify=ssl.create_default_context(cafile=str(srv.data_dir / "tls.crt")),
                         headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _apply(srv: HttpServer, *objs: Obj) -> None:
    with _http(srv, srv.token) as c:
        for o in objs:
            rk_path = {"Namespace": "/api/v1/namespaces", "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
                       "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                       "Pod": "/api/v1/namespaces/{ns}/pods"}[o["kind"]]
            r = c.post(rk_path.format(ns=o["metadata"].get("namespace", "")), json=o)
            assert r.status_code in (201, 409), r.text


def test_admin_token_still_works_and_a_wrong_token_gets_401(srv: HttpServer) -> None:
    with _http(srv, srv.token) as c:
        assert c.get("/api/v1/namespaces").status_code == 200
    with _http(srv, "nope") as c:
        r = c.get("/api/v1/namespaces")
        assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"
        assert c.get("/version").status_code == 200


def test_static_user_is_forbidden_until_a_rolebinding_grants_edit_in_one_namespace(srv: HttpServer) -> None:
    _apply(srv, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
    with _http(srv, "alice-token") as c:
        r = c.get("/api/v1/namespaces/team-a/configmaps")
        assert r.status_code == 403
        assert r.json()["message"] == ('configmaps is forbidden: User "alice" cannot list resource "configmaps" in '
                                       'API group "" in the namespace "team-a"')
    # the admin role is aggregated by the clusterrole-aggregation controller; "edit" works here
    # through the system:aggregate-to-edit rules once bound directly
    _apply(srv, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": "alice-edit", "namespace": "team-a"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": "system:aggregate-to-edit"},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]})
    with _http(srv, "alice-token") as c:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
        assert c.post("/api/v1/namespaces/team-a/configmaps", json=cm).status_code == 201
        assert c.post("/api/v1/namespaces/team-b/configmaps", json=cm).status_code == 403


def test_token_request_gives_a_bound_token_the_api_accepts_as_the_service_account(srv: HttpServer) -> None:
    _apply(srv, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "robots"}},
           {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "r2", "namespace": "robots"}})
    with _http(srv, srv.token) as c:
        r = c.post("/api/v1/namespaces/robots/serviceaccounts/r2/token",
                   json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 600}})
        assert r.status_code == 201, r.text
        tr = r.json()
        assert tr["spec"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
        token = tr["status"]["token"]
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        assert claims["sub"] == "system:serviceaccount:robots:r2"
        assert claims["exp"] - claims["iat"] == 600
        r = c.post("/api/v1/namespaces/robots/serviceaccounts/r2/token", json={"spec": {"expirationSeconds": 60}})
        assert r.status_code == 422
        assert "may not specify a duration less than 10 minutes" in r.json()["message"]
        assert c.post("/api/v1/namespaces/robots/serviceaccounts/none/token", json={}).status_code == 404
    with _http(srv, token) as c:
        r = c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                   json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert r.status_code == 201, r.text
        assert r.json()["status"]["userInfo"]["username"] == "system:serviceaccount:robots:r2"
        assert c.get("/api/v1/namespaces/robots/pods").status_code == 403
@pytest.fixture(scope="module")
def kubectl_as(srv: HttpServer, tmp_path_factory: pytest.TempPathFactory):
    binary = kubectl_binary()
    cache = tmp_path_factory.mktemp("kubecache-auth")

    def run(token: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        cfg = yaml.safe_load(srv.kubeconfig.read_text())
        if token is not None:
            cfg["users"][0]["user"]["token"] = token
        path = cache / f"kc-{abs(hash(token))}"
        path.write_text(yaml.safe_dump(cfg))
        env = {**os.environ, "KUBECONFIG": str(path), "HOME": str(cache)}
        return subprocess.run([binary, "--cache-dir", str(cache / "cache"), *args], env=env, capture_output=True,
                              text=True, timeout=60)

    return run


@pytest.mark.kubectl
def test_kubectl_auth_can_i_answers_per_user_and_namespace(srv: HttpServer, kubectl_as: Any) -> None:
    _apply(srv, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "canns"}},
           {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bob-view", "namespace": "canns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:aggregate-to-view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    p = kubectl_as(None, "auth", "can-i", "delete", "nodes")
    assert (p.returncode, p.stdout.strip()) == (0, "yes"), p.stderr
    p = kubectl_as("bob-token", "auth", "can-i", "list", "pods", "-n", "canns")
    assert (p.returncode, p.stdout.strip()) == (0, "yes"), p.stderr
    p = kubectl_as("bob-token", "auth", "can-i", "delete", "pods", "-n", "canns")
    assert (p.returncode, p.stdout.strip()) == (1, "no"), p.stderr
    p = kubectl_as("bob-token", "auth", "can-i", "--list", "-n", "canns")
    assert p.returncode == 0, p.stderr
    assert "pods" in p.stdout and "selfsubjectaccessreviews.authorization.k8s.io" in p.stdout
    p = kubectl_as("bob-token", "auth", "whoami", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["status"]["userInfo"]["username"] == "bob"


@pytest.mark.kubectl
def test_kubectl_create_token_gives_a_token_that_authenticates(srv: HttpServer, kubectl_as: Any) -> None:
    _apply(srv, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ci", "namespace": "default"}})
    p = kubectl_as(None, "create", "token", "ci", "--duration", "20m")
    assert p.returncode == 0, p.stderr
    token = p.stdout.strip()
    p = kubectl_as(token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert (p.returncode, p.stdout) == (0, "system:serviceaccount:default:ci"), p.stderr


@pytest.mark.kubectl
def test_kubectl_as_impersonates_a_user_when_allowed(srv: HttpServer, kubectl_as: Any) -> None:
    _apply(srv, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "asns"}},
           {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bob-view", "namespace": "asns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:aggregate-to-view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    p = kubectl_as(None, "auth", "can-i", "list", "pods", "-n", "asns", "--as", "bob")
    assert (p.returncode, p.stdout.strip()) == (0, "yes"), p.stderr
    p = kubectl_as(None, "auth", "can-i", "delete", "pods", "-n", "asns", "--as", "bob")
    assert (p.returncode, p.stdout.strip()) == (1, "no"), p.stderr
    p = kubectl_as("bob-token", "get", "pods", "-n", "asns", "--as", "alice")
    assert p.returncode == 1
    assert 'users "alice" is forbidden: User "bob" cannot impersonate resource "users"' in p.stderr


def test_impersonation_headers_are_found_in_any_ascii_case_and_only_there() -> None:
    """``Impersonate-User`` / ``Impersonate-Group`` are read whatever the ASCII case of their
    names; other headers, and names that only look alike (a Latin-1 letter in them), are not."""
    from pumice.apiserver.access import Access
    from pumice.apiserver.authn import ADMIN_USER

    access = Access(Authenticator("t"), RBACAuthorizer(lambda *a: [], lambda *a: None),
                    ServiceAccountTokenIssuer(None), lambda *a: None, lambda: 0.0, mode="AlwaysAllow")
    plain = [(b"accept", b"application/json"), (b"user-agent", b"kubectl"), (b"content-type", b"application/json")]
    assert access.impersonate(ADMIN_USER, plain) is ADMIN_USER
    for user_name, group_name in ((b"Impersonate-User", b"IMPERSONATE-GROUP"), (b"impersonate-user", b"iMpErSoNaTe-gRoUp")):
        got = access.impersonate(ADMIN_USER, [*plain, (user_name, b"alice"), (group_name, b"devs")])
        assert got is not None and got.name == "alice" and got.groups == ("devs", "system:authenticated")
    alike = [(b"impersonate-us\xe9r", b"alice"), (b"impersonat\xc9-user", b"alice"), (b"impersonate-users", b"x")]
    assert access.impersonate(ADMIN_USER, [*plain, *alike]) is ADMIN_USER
    with pytest.raises(Exception, match="without impersonating a user"):
        access.impersonate(ADMIN_USER, [*plain, (b"Impersonate-Group", b"devs")])


@pytest.mark.parametrize(("path", "kind", "body", "why"), [
    ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "SelfSubjectAccessReview", {"spec": "x"},
     "json: cannot unmarshal string into Go struct field SelfSubjectAccessReview.spec of type "
     "v1.SelfSubjectAccessReviewSpec"),
    ("/apis/authorization.k8s.io/v1/subjectaccessreviews", "SubjectAccessReview", {"spec": 5},
     "json: cannot unmarshal number into Go struct field SubjectAccessReview.spec of type v1.SubjectAccessReviewSpec"),
    ("/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", "LocalSubjectAccessReview",
     {"spec": [1]}, "json: cannot unmarshal array into Go struct field LocalSubjectAccessReview.spec of type "
     "v1.SubjectAccessReviewSpec"),
    ("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "SelfSubjectRulesReview", {"spec": "x"},
     "json: cannot unmarshal string into Go struct field SelfSubjectRulesReview.spec of type "
     "v1.SelfSubjectRulesReviewSpec"),
    ("/apis/authentication.k8s.io/v1/tokenreviews", "TokenReview", {"metadata": {"name": 5}, "spec": {"token": "t"}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
    ("/api/v1/namespaces/default/serviceaccounts/default/token", "TokenRequest", {"spec": {"audiences": "abc"}},
     "json: cannot unmarshal string into Go struct field TokenRequestSpec.spec.audiences of type []string"),
])
def test_a_review_or_token_request_of_the_wrong_json_types_is_kube_apiservers_400(
        srv: HttpServer, path: str, kind: str, body: Obj, why: str) -> None:
    """Trial 16 F-1: these bodies were never type-checked: a 500 with a traceback for ``spec: "x"``,
    a token for the audiences a, b and c for ``audiences: "abc"``."""
    with _http(srv, srv.token) as c:
        r = c.post(path, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["reason"] == "BadRequest"
    assert r.json()["message"] == f'{kind} in version "v1" cannot be handled as a {kind}: {why}'
