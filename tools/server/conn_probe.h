// Client-disconnect detection for HTTP handlers. cpp-httplib 0.11 gives a handler no access to
// its socket, so the socket is found by its addresses (the request's local and remote address
// and port), and polled for a peer shutdown (POLLRDHUP) while the request waits or streams.
#pragma once

#include <string>

namespace lazyllm::server {

// The descriptor of this process's TCP socket connected from remote_addr:remote_port to
// local_port; -1 when none is found.
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);
// True when the peer has closed or reset the connection (never for fd < 0).
bool peer_closed(int fd);

}  // namespace lazyllm::server
