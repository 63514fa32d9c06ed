"""The client address of a request, also behind a TLS proxy: the one helper every per-address limit reads.

Behind a proxy ``REMOTE_ADDR`` is the proxy's address, the same for every participant. The proxy appends the address
it saw to ``X-Forwarded-For``, after whatever the client wrote there itself. So the header is believed only when
``REMOTE_ADDR`` is a proxy the operator named in ``ARGORA_TRUSTED_PROXIES`` (addresses or CIDR networks), and then
read from the right: the right-most address that is not a trusted proxy is the client (a chain of trusted proxies is
walked through). The left-most entries are whatever the client sent and are never taken while an untrusted address
stands right of them. Entries that are not an IP address (garbage, ``unknown``, an obfuscated name) are ignored;
``1.2.3.4:80`` and ``[2001:db8::1]:80`` lose their port; an IPv4-mapped IPv6 address is given as IPv4.
"""

from __future__ import annotations

import functools
import ipaddress

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"ARGORA_TRUSTED_PROXIES: {entry!r} is not an IP address or network") from None
    return tuple(networks)


def trusted_proxies() -> tuple[Network, ...]:
    """The networks of ``ARGORA_TRUSTED_PROXIES`` (a list or a comma-separated string; empty: none)."""
    value = getattr(settings, "ARGORA_TRUSTED_PROXIES", ()) or ()
    if isinstance(value, str):
        value = value.split(",")
    return _networks(tuple(str(v).strip() for v in value if str(v).strip()))


def parse_address(text: str) -> Address | None:
    """An address as a proxy writes it (bare, ``v4:port``, ``[v6]:port``, ``[v6]``), or ``None`` when it is none."""
    text = (text or "").strip().strip('"')
    if text.startswith("["):  # [v6] or [v6]:port
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # a zone id (fe80::1%eth0) is not part of the address
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _trusted(address: Address, networks) -> bool:
    return any(address.version == net.version and address in net for net in networks)


def client_address(request) -> str:
    """The address of the client that sent ``request`` (``""`` when the server gave none), as text."""
    remote_text = request.META.get("REMOTE_ADDR", "") or ""
    remote = parse_address(remote_text)
    networks = trusted_proxies()
    if remote is None:
        return remote_text.strip()
    if not networks or not _trusted(remote, networks):
        return str(remote)
    client = remote
    for entry in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        hop = parse_address(entry)
        if hop is None:
            continue
        client = hop
        if not _trusted(hop, networks):
            break
    return str(client)
