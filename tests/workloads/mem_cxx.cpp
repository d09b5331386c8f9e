/* mem_cxx.cpp — a C++ service's heap for diagnose memory-growth: operator new and the standard
 * containers on top of the C library's malloc, the functions named by their demangled C++ names.
 *
 * Usage: mem_cxx MODE [KIB_PER_S]
 *   leak   heavy churn (RequestRouter::handle(Request const&): 20,000 requests a second, each an
 *          insert or an erase in a std::unordered_map<std::string, std::string> over a bounded
 *          set of 2,048 sessions and a std::string of 16..2048 bytes replaced in a ring of 256,
 *          a std::vector<std::string>) and, beside it, SessionStore::remember(Request const&)
 *          keeping a copy of a request at KIB_PER_S (default 1024): a `new Entry` (48 bytes, its
 *          std::string session id short enough to stay inside it) and its `new char[1024]` body,
 *          written in full, whose pointer is then lost (kept only in a volatile last-entry
 *          pointer, overwritten by the next one): a leak
 *   grow   the same churn, and SessionStore::remember keeping the same copies reachable in a
 *          std::vector<Entry *> that only grows (a cache with no bound: growth, not a leak; the
 *          vector's own table is reallocated by std::vector<Entry*>::_M_realloc_insert as it
 *          doubles)
 *   churn  the churn alone: bounded working set, flat RSS (the healthy control)
 * KIB_PER_S counts the 1 KiB bodies; each comes with its 48-byte Entry (and, in grow, 8 bytes of
 * the vector's table). Paced against the monotonic clock every millisecond as mem_leaker.c is (a
 * late wake-up catches up on at most 50 ms of backlog: slowed down, it does less, as a service
 * would; at most 1 GiB of bodies kept); runs until killed. Owns nothing else: it only allocates.
 * Built by g++ with frame pointers and without inlining (see the Makefile); the two named member
 * functions are noinline and noclone, so that no clone (.isra, .constprop) renames them.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#define NOINLINE __attribute__((noinline, noclone))

namespace {

const unsigned WORKING_SET = 2048;
const unsigned RECENT = 256;
const double CHURN_PER_S = 20000.0;
const std::size_t BODY = 1024;
const std::size_t KEEP_MAX = std::size_t(1) << 30;

std::uint32_t rng = 12345;

std::uint32_t next_rand()
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

double now_s()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

} // namespace

/* A request as it came off the wire: a short session id and its body (no heap of its own). */
struct Request {
	char session[16];
	unsigned char body[BODY];
	std::uint32_t id;
};

/* What the store keeps of a request. */
struct Entry {
	std::string session; /* < 16 bytes: inside the Entry (the short-string buffer) */
	char *body;
	std::size_t len;
};

class SessionStore {
public:
	explicit SessionStore(bool keep) : keep_(keep) {}

	/* The growth: a copy of the request kept "for later". Lost (leak) or kept reachable (grow). */
	NOINLINE void remember(const Request &req)
	{
		Entry *e = new Entry;
		e->session = req.session;
		e->body = new char[BODY];
		e->len = BODY;
		std::memcpy(e->body, req.body, BODY);
		if (keep_)
			kept_.push_back(e);
		last_ = e;
	}

private:
	bool keep_;
	std::vector<Entry *> kept_;
	Entry *volatile last_ = nullptr;
};

class RequestRouter {
public:
	RequestRouter() : recent_(RECENT) {}

	/* One request: a session opened (inserted) or closed (erased), and its reply kept among the
	 * last RECENT ones; every block it allocates is freed later (bounded working set). */
	NOINLINE void handle(const Request &req)
	{
		std::size_t size = 16 + next_rand() % 2033;
		std::string key(req.session);
		auto it = sessions_.find(key);
		if (it != sessions_.end())
			sessions_.erase(it);
		else
			sessions_.emplace(key, std::string(size, char('a' + req.id % 26)));
		recent_[req.id % RECENT] = std::string(2064 - size, 'r');
	}

private:
	std::unordered_map<std::string, std::string> sessions_;
	std::vector<std::string> recent_;
};

static Request req;

/* A request for session id (one of WORKING_SET), its body written in full. */
static const Request &next_request(std::uint32_t id)
{
	std::snprintf(req.session, sizeof(req.session), "s%u", id % WORKING_SET);
	req.id = id;
	std::memset(req.body, int('b' + id % 16), sizeof(req.body));
	return req;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (std::strcmp(argv[1], "leak") && std::strcmp(argv[1], "grow") && std::strcmp(argv[1], "churn"))) {
		std::fprintf(stderr, "usage: mem_cxx leak|grow|churn [KIB_PER_S]\n");
		return 2;
	}
	bool keep = std::strcmp(argv[1], "churn") != 0, reachable = std::strcmp(argv[1], "grow") == 0;
	double keep_per_s = (argc > 2 ? std::strtod(argv[2], nullptr) : 1024.0) * 1024.0 / BODY;
	static SessionStore store(reachable);
	static RequestRouter router;
	for (unsigned i = 0; i < WORKING_SET; i++)
		router.handle(next_request(next_rand()));
	double start = now_s();
	std::size_t churned = 0, kept = 0;
	for (;;) {
		double t = now_s() - start;
		std::size_t want = std::size_t(t * CHURN_PER_S);
		/* As mem_leaker.c: at most 50 ms of backlog is kept, so that the rate after a traced
		 * window is the rate during it, not a burst repaying the lag. */
		if (want > churned + std::size_t(CHURN_PER_S / 20))
			churned = want - std::size_t(CHURN_PER_S / 20);
		for (; churned < want; churned++)
			router.handle(next_request(next_rand()));
		if (keep) {
			std::size_t kwant = std::size_t(t * keep_per_s);
			if (kwant > kept + std::size_t(keep_per_s / 20) + 1)
				kept = kwant - std::size_t(keep_per_s / 20) - 1;
			for (; kept < kwant && kept * BODY < KEEP_MAX; kept++)
				store.remember(next_request(std::uint32_t(kept)));
		}
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, nullptr);
	}
}
