"""argora.outbound: a URL a user chose is never a way into the server's own networks (SECURITY.md, "Outbound
calls"). Addresses of loopback, link-local, private, CGNAT, unspecified, multicast and reserved ranges are refused in
every spelling unless the operator allowed them; the check runs again at connect time on every address the name
resolves to, and the connection goes to the address checked (DNS rebinding); redirects are not followed. A local
fake server (pytest-httpserver) stands for the far end; names are answered by a fake resolver, never the network."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.exceptions import ImproperlyConfigured
from pytest_httpserver import HTTPServer
from werkzeug import Response as WResponse

from argora import outbound

REAL_GETADDRINFO = socket.getaddrinfo


@pytest.fixture
def resolver(monkeypatch):
    """``names[host]``: the addresses a name resolves to, one list per call (the last one repeats); any other host
    goes to the system resolver (address literals, ``localhost``). ``calls[host]`` counts the look-ups."""
    names: dict[str, list[list[str]]] = {}
    calls: dict[str, int] = {}

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if host not in names:
            return REAL_GETADDRINFO(host, port, family, type, proto, flags)
        n = calls.get(host, 0)
        calls[host] = n + 1
        answers = names[host][min(n, len(names[host]) - 1)]
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (a, port, 0, 0) if ":" in a else (a, port),
            )
            for a in answers
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    resolver.names, resolver.calls = names, calls
    return resolver


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.1.2.3",
        "0.0.0.0",
        "10.0.0.1",
        "172.16.5.4",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.0.8",
        "198.18.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "fec0::1",
        "::7f00:1",
    ],
)
def test_addresses_of_the_servers_networks_are_internal(address):
    assert outbound.internal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"])
def test_public_addresses_are_not(address):
    assert not outbound.internal(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/v1",
        "http://[::1]/v1",
        "http://localhost/v1",
        "http://LOCALHOST./v1",
        "http://2130706433/",
        "http://017700000001/",
        "http://0x7f.1/",
        "http://0/",
        "http://[::ffff:127.0.0.1]/",
        "https://192.168.0.10:8443/v1",
    ],
)
def test_every_spelling_of_an_internal_address_is_refused(url):
    with pytest.raises(outbound.Refused, match="server's own networks"):
        outbound.check_url(url, allow=outbound.allowed([]))


@pytest.mark.parametrize(
    "url, reason",
    [
        ("ftp://example.org/", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "http:// or https://"),
        ("http://user:secret@93.184.216.34/", "no user name or password"),
        ("http://93.184.216.34@127.0.0.1/", "no user name or password"),
        ("http://evil.example\\@127.0.0.1/", "backslashes"),
        ("http:///v1", "names no host"),
        ("", "http:// or https://"),
    ],
)
def test_only_http_urls_without_user_info(url, reason):
    with pytest.raises(outbound.Refused, match=reason):
        outbound.split(url)


def test_the_operator_allows_hosts_addresses_and_networks(resolver):
    resolver.names["llm.corp.test"] = [["10.1.2.3"]]
    allow = outbound.allowed(["LLM.corp.test", "127.0.0.1", "[::1]", "192.168.0.0/16"])
    assert outbound.check_url("http://llm.corp.test:8000/v1", allow=allow)
    assert outbound.check_url("http://127.0.0.1:8000/v1", allow=allow)
    assert outbound.check_url("http://2130706433:8000/v1", allow=allow)  # the same address, another spelling
    assert outbound.check_url("http://[::1]/v1", allow=allow)
    assert outbound.check_url("http://192.168.7.7/v1", allow=allow)
    for refused in ("http://127.0.0.2/v1", "http://10.1.2.3/v1", "http://169.254.169.254/"):
        with pytest.raises(outbound.Refused):
            outbound.check_url(refused, allow=allow)
    with pytest.raises(ImproperlyConfigured):
        outbound.allowed(["10.0.0.0/33"])


def test_every_address_a_name_resolves_to_is_checked(resolver):
    resolver.names["mixed.test"] = [["93.184.216.34", "10.0.0.5"]]
    resolver.names["public.test"] = [["93.184.216.34"]]
    with pytest.raises(outbound.Refused, match=r"mixed.test \(10.0.0.5\)"):
        outbound.check_url("https://mixed.test/v1", allow=outbound.allowed([]))
    assert outbound.check_url("https://public.test/v1", allow=outbound.allowed([]))
    with pytest.raises(outbound.Refused, match="does not resolve"):
        outbound.check_url("https://nothing.invalid/v1", allow=outbound.allowed([]))


def test_a_name_that_resolves_elsewhere_at_call_time_is_refused(resolver, httpserver, settings):
    """DNS rebinding: public when the URL was checked, loopback when it is called."""
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = []
    httpserver.expect_request("/v1/chat/completions").respond_with_data("secret")
    resolver.names["rebind.test"] = [["93.184.216.34"], ["127.0.0.1"]]
    url = f"http://rebind.test:{httpserver.port}/v1/chat/completions"
    assert outbound.check_url(url)
    with pytest.raises(outbound.Refused, match=r"rebind.test \(127.0.0.1\)"):
        outbound.post(url, json={}, timeout=5)
    assert httpserver.log == []


def test_the_call_connects_to_the_address_it_checked(resolver, httpserver, settings):
    """A second look-up of the name would answer an unreachable address: the connection uses the checked one and
    keeps the name for the Host header."""
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = ["127.0.0.0/8"]
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_data("ok")
    resolver.names["pinned.test"] = [["127.0.0.1"], ["203.0.113.9"]]
    response = outbound.post(f"http://pinned.test:{httpserver.port}/v1/chat/completions", json={"a": 1}, timeout=(2, 5))
    assert response.status_code == 200 and response.text == "ok"
    assert resolver.calls["pinned.test"] == 1
    [(request, _)] = httpserver.log
    assert request.headers["Host"] == f"pinned.test:{httpserver.port}" and request.get_json() == {"a": 1}


def test_redirects_are_not_followed(httpserver, settings):
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    target = httpserver.url_for("/inside")
    httpserver.expect_request("/out", method="POST").respond_with_response(
        WResponse("", status=307, headers={"Location": target})
    )
    httpserver.expect_request("/inside").respond_with_data("internal")
    for trusted in (False, True):
        response = outbound.post(httpserver.url_for("/out"), json={}, timeout=5, trusted=trusted)
        assert response.status_code == 307
    assert [r.path for r, _ in httpserver.log] == ["/out", "/out"]
    # a caller that follows redirects with a checked session gets every hop checked: 127.0.0.1 is not allowed
    httpserver.clear_log()
    httpserver.expect_request("/out2", method="POST").respond_with_response(
        WResponse("", status=307, headers={"Location": target.replace("localhost", "127.0.0.1")})
    )
    with outbound.session() as s, pytest.raises(outbound.Refused, match="127.0.0.1"):
        s.post(httpserver.url_for("/out2"), json={}, timeout=5)
    assert [r.path for r, _ in httpserver.log] == ["/out2"]


def test_an_operators_url_is_trusted_only_when_the_caller_says_so(httpserver, settings):
    settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = []
    httpserver.expect_request("/v1", method="POST").respond_with_data("ok")
    with pytest.raises(outbound.Refused):
        outbound.post(httpserver.url_for("/v1"), json={}, timeout=5)
    assert outbound.post(httpserver.url_for("/v1"), json={}, timeout=5, trusted=True).text == "ok"
    assert len(httpserver.log) == 1
    assert outbound.same_origin("http://localhost:8000/v1", "http://LOCALHOST:8000/other")
    assert not outbound.same_origin("http://localhost:8000/v1", "http://127.0.0.1:8000/v1")
    assert not outbound.same_origin("http://localhost:8000/v1", "https://localhost:8000/v1")


def _self_signed(tmp_path, name: str):
    """A certificate for ``name`` and its key (PEM files), valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def test_https_verifies_the_name_while_connecting_to_the_checked_address(resolver, tmp_path, settings):
    cert_file, key_file = _self_signed(tmp_path, "llm.pinned.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.start()
    try:
        server.expect_request("/v1/chat/completions", method="POST").respond_with_data("tls ok")
        settings.ARGORA_OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
        resolver.names["llm.pinned.test"] = [["127.0.0.1"]]
        resolver.names["other.pinned.test"] = [["127.0.0.1"]]
        url = f"https://llm.pinned.test:{server.port}/v1/chat/completions"
        assert outbound.post(url, json={}, timeout=5, verify=str(cert_file)).text == "tls ok"
        with pytest.raises(requests.exceptions.SSLError):  # the certificate is checked against the name
            outbound.post(url.replace("llm.", "other."), json={}, timeout=5, verify=str(cert_file))
        assert len(server.log) == 1
    finally:
        server.clear()
        server.stop()
