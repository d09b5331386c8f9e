/* paced_calls.c — a known event rate for the budget pre-flight tests: RATE calls per second
 * (argv[1], default 5000) of paced_op(), each sending one UDP datagram over loopback to its own
 * socket and reading it back (one NET_RX softirq per datagram on the sending CPU).
 *
 * The rate is kept with absolute deadlines every millisecond, so a probe that slows each call a
 * little does not change it; the achieved rate is written to argv[2] (if given) every 100 ms as
 * "calls seconds", the independent count the tests compare the pre-flight's figures with.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int sock;
static struct sockaddr_in self;

__attribute__((noinline)) void paced_op(void)
{
	char buf[32] = "tick";
	sendto(sock, buf, sizeof(buf), 0, (struct sockaddr *)&self, sizeof(self));
	recv(sock, buf, sizeof(buf), MSG_DONTWAIT);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long rate = argc > 1 ? atol(argv[1]) : 5000;
	const char *status = argc > 2 ? argv[2] : NULL;
	socklen_t len = sizeof(self);

	sock = socket(AF_INET, SOCK_DGRAM, 0);
	self.sin_family = AF_INET;
	self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (sock < 0 || bind(sock, (struct sockaddr *)&self, sizeof(self)) ||
	    getsockname(sock, (struct sockaddr *)&self, &len)) {
		perror("paced_calls: socket");
		return 1;
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	double start = now_s(), last_write = start;
	unsigned long long calls = 0;
	for (unsigned long tick = 1;; tick++) {
		/* calls due by this millisecond: rate * tick / 1000, without drift */
		unsigned long long due = (unsigned long long)rate * tick / 1000;
		while (calls < due) {
			paced_op();
			calls++;
		}
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		double t = now_s();
		if (status && t - last_write >= 0.1) {
			char tmp[4096];
			snprintf(tmp, sizeof(tmp), "%s.tmp", status);
			FILE *f = fopen(tmp, "w");
			if (f) {
				fprintf(f, "%llu %.6f\n", calls, t - start);
				fclose(f);
				rename(tmp, status);
			}
			last_write = t;
		}
	}
}
