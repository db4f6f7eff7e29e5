// Client-disconnect detection for HTTP handlers. cpp-httplib 0.11 gives a handler no access to
// its socket, so the socket is found by its addresses (the request's local and remote address
// and port), and polled for a peer shutdown (POLLRDHUP) while the request waits or streams.
#pragma once

#include <string>

namespace lazyllm::server {

// The descriptor of this process's TCP socket connected from remote_addr:remote_port to
// local_port; -1 when none is found.
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);
// Sets the backlog of this process's listening socket on local_port (cpp-httplib 0.11, compiled
// in Debian's libcpp-httplib, listens with 5: a burst of new connections overflows it and each
// refused one is retried by the client's kernel a second later). False when none is found.
bool widen_listen_backlog(int local_port, int backlog);
// Shuts down (both ways) this process's TCP connections accepted on local_port: their threads,
// waiting on an idle keep-alive connection for up to --keep-alive, see the end at once.
// Returns how many.
int shutdown_connections(int local_port);
// True when the peer has closed or reset the connection (never for fd < 0).
bool peer_closed(int fd);

}  // namespace lazyllm::server
