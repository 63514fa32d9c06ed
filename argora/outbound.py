"""Outbound HTTP calls to a URL that a user chose (an LLM annotator's base URL; any later webhook or callback).

Such a URL must not be a way into the server's own network: a host that resolves to a loopback, link-local
(169.254/16, fe80::/10), private (10/8, 172.16/12, 192.168/16, fc00::/7), CGNAT (100.64/10), unspecified, multicast,
reserved or otherwise non-global address -- IPv6 forms that carry an IPv4 address (``::ffff:a.b.c.d``, NAT64, 6to4)
included -- is refused, unless the operator listed its host name, its address or a network holding it in
``ARGORA_OUTBOUND_ALLOWED_HOSTS``. Only ``http`` and ``https``, and no user name or password in the URL.

:func:`check_url` is the check on write (a form, the API, a service: the caller turns :class:`Refused` into its
``FieldError``); :func:`post` is the call. It checks again when it connects, on *every* address the name resolves
to, and then connects to the address it checked (the request keeps the name in its ``Host`` header and for TLS),
so a name that resolves elsewhere later (DNS rebinding) or a URL changed in the database since cannot get through.
Redirects are never followed (a 3xx is the answer), and no proxy or ``.netrc`` of the environment is used. The way of
pinning the checked address follows requests-hardened's IP filter adapter, whose filter knows no allow list.

A URL of the operator's own (from the environment, e.g. ``ARGORA_LLM_BASE_URL``) is trusted: ``post(...,
trusted=True)`` skips the address check (and still follows no redirect).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMES = {"http": 80, "https": 443}
# non-global ranges Python's ``is_global`` does not count, or IPv6 ranges that carry an IPv4 address
EXTRA_BLOCKED: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "100.64.0.0/10",  # CGNAT (shared address space): routes to internal workloads
        "192.0.0.0/24",  # IETF protocol assignments
        "192.88.99.0/24",  # 6to4 relay anycast
        "64:ff9b::/96",  # NAT64: the IPv4 address in its last 32 bits
        "64:ff9b:1::/48",  # local-use NAT64
        "2002::/16",  # 6to4: an IPv4 address in bits 16-48
        "fec0::/10",  # site-local (deprecated)
    )
)


class Refused(Exception):
    """The URL may not be called; ``str(exc)`` says why in words a person can act on. (Not a ``ValueError`` nor a
    ``requests`` error, so that neither requests nor a caller's ``except RequestException`` takes it for a network
    error.)"""


def internal(ip: Address) -> bool:
    """True for an address of the server's own networks (see the module doc)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        not ip.is_global
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or any(ip in net for net in EXTRA_BLOCKED)
    )


@dataclass(frozen=True)
class Allowed:
    hosts: frozenset[str]
    networks: tuple[Network, ...]

    def host(self, name: str) -> bool:
        return _normal_host(name) in self.hosts

    def address(self, ip: Address) -> bool:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip.version == net.version and ip in net for net in self.networks)


def allowed(entries: Iterable[str] | None = None) -> Allowed:
    """The operator's allow list (``ARGORA_OUTBOUND_ALLOWED_HOSTS``: host names, addresses, CIDR networks)."""
    hosts, networks = set(), []
    for entry in settings.ARGORA_OUTBOUND_ALLOWED_HOSTS if entries is None else entries:
        entry = str(entry).strip().lower()
        if not entry:
            continue
        bare = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
        try:
            networks.append(ipaddress.ip_network(bare, strict=False))
        except ValueError:
            if "/" in bare or ":" in bare:
                raise ImproperlyConfigured(
                    f"ARGORA_OUTBOUND_ALLOWED_HOSTS: {entry!r} is neither a host name, an address nor a CIDR network"
                ) from None
            hosts.add(_normal_host(bare))
    return Allowed(frozenset(hosts), tuple(networks))


def _normal_host(name: str) -> str:
    return (name or "").strip().lower().rstrip(".").strip("[]")


def split(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of an http(s) URL without user info; :class:`Refused` otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise Refused("an http:// or https:// URL")
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in url):
        raise Refused("no spaces, control characters or backslashes in the URL")
    try:
        parsed = parse_url(url)
        std = urlsplit(url)
        std_port = std.port
    except (LocationParseError, ValueError):
        raise Refused("not a valid URL") from None
    scheme = (parsed.scheme or "").lower()
    if scheme not in SCHEMES or std.scheme.lower() != scheme:
        raise Refused("an http:// or https:// URL")
    if parsed.auth is not None or "@" in std.netloc:
        raise Refused("no user name or password in the URL (an API key goes in its environment variable)")
    host, other = _normal_host(parsed.host or ""), _normal_host(std.hostname or "")
    try:
        other = other.encode("idna").decode("ascii")
    except UnicodeError:
        raise Refused("not a valid host name") from None
    if not host or host != other:
        raise Refused("the URL names no host")
    port = parsed.port or SCHEMES[scheme]
    if (std_port or SCHEMES[scheme]) != port:
        raise Refused("not a valid URL")
    return scheme, host, port


def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to (an address literal in any form ``inet_aton`` reads, e.g. ``2130706433``,
    resolves to itself); :class:`Refused` when it resolves to none."""
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise Refused(f"the host {host} does not resolve ({exc})") from None
    out: list[Address] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if ip not in out:
                out.append(ip)
    if not out:
        raise Refused(f"the host {host} does not resolve")
    return out


def check_host(host: str, port: int, *, allow: Allowed | None = None) -> list[Address]:
    """The addresses to connect to for ``host``: every one it resolves to, each public or allowed by the operator;
    :class:`Refused` naming the first that is not."""
    allow = allowed() if allow is None else allow
    addresses = resolve(host, port)
    if allow.host(host):
        return addresses
    for ip in addresses:
        if internal(ip) and not allow.address(ip):
            shown = host if _normal_host(host) == str(ip) else f"{host} ({ip})"
            raise Refused(
                f"{shown} is an address of the server's own networks (loopback, private, link-local or "
                f"reserved); the operator can allow it in ARGORA_OUTBOUND_ALLOWED_HOSTS"
            )
    return addresses


def check_url(url: str, *, allow: Allowed | None = None) -> str:
    """``url`` when it may be called now (see the module doc); :class:`Refused` otherwise. The call checks again."""
    _scheme, host, port = split(url)
    check_host(host, port, allow=allow)
    return url


def same_origin(a: str, b: str) -> bool:
    """Both URLs reach the same scheme, host and port (False when either is not a valid http(s) URL)."""
    try:
        return split(a) == split(b)
    except Refused:
        return False


class CheckedAdapter(HTTPAdapter):
    """Checks the host of every connection and connects to the address it checked (see the module doc)."""

    def build_connection_pool_key_attributes(self, request, verify, cert=None):
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        scheme, name, port = host_params["scheme"], host_params["host"], host_params["port"]
        if scheme not in SCHEMES or not name:
            raise Refused("an http:// or https:// URL")
        addresses = check_host(name, port or SCHEMES[scheme])
        headers = CaseInsensitiveDict(request.headers or {})  # a copy: the caller's dict may be shared
        shown = f"[{name}]" if ":" in name else name
        headers["Host"] = shown if port is None else f"{shown}:{port}"
        request.headers = headers
        if scheme == "https":  # the certificate and SNI are for the name, not the address connected to
            pool_kwargs["assert_hostname"] = name
            pool_kwargs["server_hostname"] = name
        host_params["host"] = str(addresses[0])
        return host_params, pool_kwargs

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        return super().send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=None)


def session() -> requests.Session:
    """A requests session whose every connection is checked (no proxy, ``.netrc`` or CA bundle of the
    environment; pass ``verify=`` for a private CA). A caller that lets it follow redirects gets each hop checked."""
    s = requests.Session()
    s.trust_env = False
    adapter = CheckedAdapter()
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


def post(url: str, *, trusted: bool = False, **kwargs) -> requests.Response:
    """``requests.post(url, **kwargs)`` without following redirects; unless ``trusted`` (an operator's URL) the URL
    is checked (:func:`split`) and every connection too (:class:`CheckedAdapter`). Raises :class:`Refused`, or what
    requests raises."""
    kwargs["allow_redirects"] = False
    if trusted:
        return requests.post(url, **kwargs)
    split(url)
    with session() as s:
        return s.post(url, **kwargs)
