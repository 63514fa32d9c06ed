"""argora.clientaddr: X-Forwarded-For is believed only from ARGORA_TRUSTED_PROXIES, read from the right."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from argora.clientaddr import client_address

PROXY = "10.0.0.5"


def addr(remote, forwarded=None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(RequestFactory().get("/", **extra))


def test_without_trusted_proxies_the_header_is_ignored(settings):
    settings.ARGORA_TRUSTED_PROXIES = []
    assert addr("203.0.113.7", "198.51.100.1") == "203.0.113.7"
    assert addr(PROXY, "198.51.100.1") == PROXY


def test_the_header_is_honoured_only_from_a_configured_proxy(settings):
    settings.ARGORA_TRUSTED_PROXIES = [PROXY]
    assert addr(PROXY, "198.51.100.1") == "198.51.100.1"
    # a client talking to the server directly cannot name another address
    assert addr("203.0.113.7", "198.51.100.1") == "203.0.113.7"
    assert addr(PROXY) == PROXY  # no header: the proxy itself (a health check)


def test_spoofed_left_most_entries_are_ignored(settings):
    settings.ARGORA_TRUSTED_PROXIES = [PROXY]
    # the client wrote "1.1.1.1, 2.2.2.2"; the proxy appended the address it saw
    assert addr(PROXY, "1.1.1.1, 2.2.2.2, 198.51.100.1") == "198.51.100.1"
    # a client pretending to be the proxy: the right-most untrusted entry still wins
    assert addr(PROXY, "198.51.100.99, 10.0.0.5, 198.51.100.1") == "198.51.100.1"


def test_a_chain_of_trusted_proxies_is_walked_through(settings):
    settings.ARGORA_TRUSTED_PROXIES = ["10.0.0.0/8", "192.168.1.7"]
    assert addr("10.1.2.3", "6.6.6.6, 198.51.100.1, 192.168.1.7, 10.9.9.9") == "198.51.100.1"
    # every hop trusted (an internal client): the farthest one
    assert addr("10.1.2.3", "10.7.7.7, 192.168.1.7") == "10.7.7.7"


def test_ipv6_clients_and_proxies(settings):
    settings.ARGORA_TRUSTED_PROXIES = ["2001:db8:ffff::/48", PROXY]
    assert addr("2001:db8:ffff::1", "2001:db8:1::42") == "2001:db8:1::42"
    assert addr("2001:db8:ffff::1", "[2001:db8:1::42]:4711") == "2001:db8:1::42"
    assert addr(PROXY, "2001:DB8:0:0::7") == "2001:db8::7"  # one spelling per address
    assert addr("::ffff:10.0.0.5", "198.51.100.1") == "198.51.100.1"  # IPv4-mapped proxy address
    assert addr("2001:db8:1::9", "198.51.100.1") == "2001:db8:1::9"  # an untrusted IPv6 peer


def test_garbage_entries_are_ignored(settings):
    settings.ARGORA_TRUSTED_PROXIES = [PROXY]
    assert addr(PROXY, "unknown, ;drop table, 198.51.100.1:8080, _hidden") == "198.51.100.1"
    assert addr(PROXY, "not-an-ip, , 999.1.1.1") == PROXY
    assert addr(PROXY, "\x00" * 10) == PROXY
    assert addr("", "198.51.100.1") == ""  # no peer address at all (a unix socket): nothing to trust


def test_a_malformed_setting_is_a_configuration_error(settings):
    settings.ARGORA_TRUSTED_PROXIES = ["10.0.0.0/8", "proxy.example.org"]
    with pytest.raises(ImproperlyConfigured, match="proxy.example.org"):
        addr(PROXY, "198.51.100.1")
