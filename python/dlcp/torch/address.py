"""Which local address the dlcp transport binds to when the options do not say."""

import ipaddress
import os
import socket

LOOPBACK = "127.0.0.1"


def default_bind_host(environ=None):
    """DLCP_BIND_HOST when set; else the local address that routes to MASTER_ADDR (so torchrun
    jobs across hosts work without configuration); else loopback."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("DLCP_BIND_HOST", "")
    if explicit:
        return explicit
    master = environ.get("MASTER_ADDR", "")
    if not master:
        return LOOPBACK
    try:
        address = socket.getaddrinfo(master, None, socket.AF_INET)[0][4][0]
    except OSError:
        return LOOPBACK
    if ipaddress.ip_address(address).is_loopback:
        return LOOPBACK
    # connect() on a UDP socket sends nothing; it only picks the route and its source address.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((address, 9))
            return probe.getsockname()[0]
        except OSError:
            return LOOPBACK


def default_advertise_host(environ=None):
    """DLCP_ADVERTISE_HOST, for hosts whose bind address is not what peers dial (NAT, proxies)."""
    environ = os.environ if environ is None else environ
    return environ.get("DLCP_ADVERTISE_HOST", "")
