/* The egress forwarder of a sandbox with network "allowlist": it listens on 127.0.0.1:PORT in
 * the sandbox's own network namespace (which has only `lo`), and on the loopback address of
 * each exact allowed name (for tools that ignore proxy variables), and hands every connection it
 * accepts, as a descriptor (SCM_RIGHTS, with one byte), over the relay socket to deskd's
 * egress proxy. It never reads or writes a byte of the connections: deskd speaks HTTP
 * proxy on them and decides what may be reached, so the sandbox holds no host socket.
 *
 * It is a child of deskd-init, forked before the command, and like the init it is not
 * dumpable: the desk's processes (same uid) cannot read its memory or take its relay. If
 * the desk kills it, the desk only loses its own way out. Plain C, no allocation. */
#ifndef DESKD_SANDBOX_EGRESS_FORWARDER_H
#define DESKD_SANDBOX_EGRESS_FORWARDER_H

#include <stdint.h>

#include "init_protocol.h"

/* Listens on 127.0.0.1:port and on each of the `more_count` places in `more` (the allowed
 * names' addresses in 127.100.0.0/16, which the sandbox's /etc/hosts names), forks the
 * forwarder (which keeps only the listeners and `relay_fd`) and closes them in the caller.
 * Returns 0, or -1 with errno and `*step` naming what failed: the launch then fails. */
int deskd_start_egress_forwarder(int relay_fd, uint16_t port, const struct deskd_egress_listener *more,
                                 uint32_t more_count, const char **step);

#endif
