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

// Calls fn(fd, local address) for each of this process's IPv4/IPv6 sockets until it returns true;
// that fd, or -1.
template <typename F>
int find_socket(F fn) {
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
        if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
        if (fn(static_cast<int>(fd), local)) {
            found = static_cast<int>(fd);
            break;
        }
    }
    closedir(dir);
    return found;
}

}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
    return find_socket([&](int fd, const sockaddr_storage& local) {
        sockaddr_storage peer{};
        socklen_t pl = sizeof(peer);
        if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return false;
        std::string la, pa;
        int lp = 0, pp = 0;
        if (!addr_port(local, la, lp) || !addr_port(peer, pa, pp)) return false;
        return lp == local_port && pp == remote_port && pa == remote_addr;
    });
}

int shutdown_connections(int local_port) {
    int n = 0;
    find_socket([&](int fd, const sockaddr_storage& local) {
        sockaddr_storage peer{};
        socklen_t pl = sizeof(peer);
        std::string la;
        int lp = 0;
        if (addr_port(local, la, lp) && lp == local_port &&
            getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
            ::shutdown(fd, SHUT_RDWR) == 0) {
            ++n;
        }
        return false;  // every one
    });
    return n;
}

bool widen_listen_backlog(int local_port, int backlog) {
    return find_socket([&](int fd, const sockaddr_storage& local) {
               int listening = 0;
               socklen_t len = sizeof(listening);
               if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
                   return false;
               std::string la;
               int lp = 0;
               return addr_port(local, la, lp) && lp == local_port && ::listen(fd, backlog) == 0;
           }) >= 0;
}

bool peer_closed(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace lazyllm::server
