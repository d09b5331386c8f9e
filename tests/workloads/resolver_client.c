/* resolver_client.c — a request path that resolves its backend's name on every request, for
 * the latency tests: loops in connect_backend(), which calls getaddrinfo(NAME) (argv[1], default
 * "backend.diagnose.test") and then handles the request (WORK_US of computation). With a slow DNS
 * server (the test's stub, answering late) nearly all its time is the lookup's; with a fast one,
 * a few percent: the control.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define WORK_US 60000 /* a lookup answered at once stays ~1% of the time, on a loaded machine too */

volatile unsigned long work;

static unsigned long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000;
}

__attribute__((noinline)) void connect_backend(const char *name)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(name, "80", &hints, &res) == 0)
		freeaddrinfo(res);
	for (unsigned long end = now_us() + WORK_US; now_us() < end;)
		work = work * 6364136223846793005ul + 1;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "backend.diagnose.test";
	for (;;)
		connect_backend(name);
}
