#include "server/conn_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace lazyllm::server {

namespace {

// Address and port of a sockaddr (IPv4 or IPv6), as httplib prints them (inet_ntop).
bool addr_port(const sockaddr_storage& ss, std::string& addr, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
        inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
        port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
        inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
        port = ntohs(a->sin6_port);
    } else {
        return false;
    }
    addr = buf;
    return true;
}

// Calls fn(fd) for each of this process's IPv4/IPv6 sockets bound to local_port until it
// returns true; that fd, or -1.
template <typename F>
int find_socket(int local_port, F fn) {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return -1;
    int found = -1;
    while (dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0') continue;
        struct stat st {};
        if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage local{};
        socklen_t ll = sizeof(local);
        if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0)
            continue;
        std::string addr;
        int port = 0;
        if (!addr_port(local, addr, port) || port != local_port) continue;
        if (fn(static_cast<int>(fd))) {
            found = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
    return found;
}

// The peer's address and port of a connected socket; false when it has none.
bool peer_of(int fd, std::string& addr, int& port) {
    sockaddr_storage peer{};
    socklen_t pl = sizeof(peer);
    return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
           addr_port(peer, addr, port);
}

}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
    return find_socket(local_port, [&](int fd) {
        std::string addr;
        int port = 0;
        return peer_of(fd, addr, port) && port == remote_port && addr == remote_addr;
    });
}

int shutdown_connections(int local_port) {
    int n = 0;
    find_socket(local_port, [&](int fd) {
        std::string addr;
        int port = 0;
        if (peer_of(fd, addr, port) && ::shutdown(fd, SHUT_RDWR) == 0) ++n;
        return false;  // every one
    });
    return n;
}

bool widen_listen_backlog(int local_port, int backlog) {
    return find_socket(local_port, [&](int fd) {
               int listening = 0;
               socklen_t len = sizeof(listening);
               return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 &&
                      listening && ::listen(fd, backlog) == 0;
           }) >= 0;
}

bool peer_closed(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace lazyllm::server
