/*
 * kh_rpeer — NETLINK_SOCK_DIAG exact lookup of the peer socket.
 *
 * inet_diag with a full 4-tuple and no NLM_F_DUMP asks the kernel for one
 * socket: the one whose local end is the peer's address and whose remote
 * end is ours, i.e. the client's own socket, with the uid that created it
 * (sk_uid).  The answer arrives before sendmsg returns, so the lookup is a
 * pair of system calls on the accept path, and needs no privilege.
 *
 * Only a socket a process still holds says who is there: a TIME_WAIT or
 * request socket reports uid 0 and an orphaned one (closed by its owner)
 * no inode, and both are refused rather than taken for root.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "relay/kh_rpeer.h"

/* linux/tcp_states.h is not exported: the states a held socket can be in. */
enum {
	KH_TCP_ESTABLISHED = 1,
	KH_TCP_FIN_WAIT1 = 4,
	KH_TCP_FIN_WAIT2 = 5,
	KH_TCP_CLOSE_WAIT = 8,
	KH_TCP_LAST_ACK = 9,
	KH_TCP_CLOSING = 11,
};

int
kh_rpeer_open(kh_error *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return kh_fail(err, KH_ERR_UNSUPPORTED, "netlink sock_diag socket: %s "
			       "(the kernel needs CONFIG_INET_DIAG and CONFIG_INET_TCP_DIAG)",
			       strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;

		(void)close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "bind netlink socket: %s", strerror(e));
	}
	return fd;
}

static bool
kh_rpeer_held_state(uint8_t state)
{
	switch (state) {
	case KH_TCP_ESTABLISHED:
	case KH_TCP_FIN_WAIT1:
	case KH_TCP_FIN_WAIT2:
	case KH_TCP_CLOSE_WAIT:
	case KH_TCP_LAST_ACK:
	case KH_TCP_CLOSING:
		return true;
	}
	return false;
}

/* Fill the request's socket id: src = the peer's end, dst = ours. */
static int
kh_rpeer_fill_id(struct inet_diag_req_v2 *r, const struct sockaddr *local,
		 const struct sockaddr *peer, kh_error *err)
{
	if (local->sa_family != peer->sa_family)
		return kh_fail(err, KH_ERR_INPUT, "address families differ");
	r->sdiag_family = (uint8_t)peer->sa_family;
	r->sdiag_protocol = IPPROTO_TCP;
	r->idiag_states = ~0U;
	r->id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	r->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *p = (const struct sockaddr_in *)peer;
		const struct sockaddr_in *l = (const struct sockaddr_in *)local;

		r->id.idiag_sport = p->sin_port;
		r->id.idiag_dport = l->sin_port;
		memcpy(r->id.idiag_src, &p->sin_addr, 4);
		memcpy(r->id.idiag_dst, &l->sin_addr, 4);
	} else if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *p = (const struct sockaddr_in6 *)peer;
		const struct sockaddr_in6 *l = (const struct sockaddr_in6 *)local;

		r->id.idiag_sport = p->sin6_port;
		r->id.idiag_dport = l->sin6_port;
		memcpy(r->id.idiag_src, &p->sin6_addr, 16);
		memcpy(r->id.idiag_dst, &l->sin6_addr, 16);
	} else {
		return kh_fail(err, KH_ERR_INPUT, "not a TCP/IP connection");
	}
	return 0;
}

int
kh_rpeer_uid(int nlfd, const struct sockaddr *local, const struct sockaddr *peer, uid_t *uid,
	     kh_error *err)
{
	uint64_t inode;

	return kh_rpeer_lookup(nlfd, local, peer, uid, &inode, err);
}

int
kh_rpeer_lookup(int nlfd, const struct sockaddr *local, const struct sockaddr *peer,
		uid_t *uid, uint64_t *inode, kh_error *err)
{
	static uint32_t seq;
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} resp;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	const struct inet_diag_msg *m;
	const struct nlmsghdr *h;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	if (kh_rpeer_fill_id(&req.r, local, peer, err) != 0)
		return -1;
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.nlh.nlmsg_seq = ++seq;
	do {
		n = sendto(nlfd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel));
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(req))
		return kh_fail(err, KH_ERR_INTERNAL, "sock_diag request: %s",
			       n < 0 ? strerror(errno) : "short send");
	/* The kernel queues the answer before sendto returns; skip any stale one. */
	for (;;) {
		do {
			n = recv(nlfd, resp.buf, sizeof(resp.buf), MSG_DONTWAIT);
		} while (n < 0 && errno == EINTR);
		if (n < 0)
			return kh_fail(err, KH_ERR_INTERNAL, "sock_diag answer: %s", strerror(errno));
		h = &resp.nlh;
		if (!NLMSG_OK(h, (size_t)n))
			return kh_fail(err, KH_ERR_INTERNAL, "sock_diag answer is truncated");
		if (h->nlmsg_seq == seq)
			break;
	}
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);
		int code = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? -e->error : EPROTO;

		return kh_fail(err, code == ENOENT ? KH_ERR_NOTFOUND : KH_ERR_INTERNAL,
			       "the peer socket %s", code == ENOENT ? "is gone" : strerror(code));
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return kh_fail(err, KH_ERR_INTERNAL, "unexpected sock_diag answer (type %u)",
			       h->nlmsg_type);
	m = NLMSG_DATA(h);
	if (m->id.idiag_sport != req.r.id.idiag_sport || m->id.idiag_dport != req.r.id.idiag_dport)
		return kh_fail(err, KH_ERR_INTERNAL, "sock_diag answered for another socket");
	if (!kh_rpeer_held_state(m->idiag_state) || m->idiag_inode == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "the peer socket is closed (state %u)",
			       m->idiag_state);
	*uid = (uid_t)m->idiag_uid;
	*inode = m->idiag_inode;
	return 0;
}
