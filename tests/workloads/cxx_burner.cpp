/* cxx_burner.cpp — test workload for C++ demangling: its CPU goes to a method of a class
 * template, shop::Checksum<unsigned long>::update(unsigned char const*, unsigned long), called
 * from shop::serve() (a function template instance) from main. Runs until killed. Built by g++
 * without inlining (see the Makefile).
 */
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace shop {

template <typename T> class Checksum {
public:
	__attribute__((noinline)) T update(const unsigned char *buf, std::size_t len)
	{
		for (int round = 0; round < 64; round++)
			for (std::size_t i = 0; i < len; i++)
				h_ = (h_ ^ buf[i]) * static_cast<T>(1099511628211ull);
		return h_;
	}

private:
	T h_ = static_cast<T>(1469598103934665603ull);
};

template <typename T> __attribute__((noinline)) T serve(Checksum<T> &c, unsigned char *buf, std::size_t len)
{
	for (std::size_t i = 0; i < len; i++)
		buf[i] = static_cast<unsigned char>(buf[i] * 31 + i);
	return c.update(buf, len);
}

} // namespace shop

static volatile std::uint64_t sink;

int main()
{
	static unsigned char buf[4096];
	shop::Checksum<unsigned long> c;
	for (;;)
		sink = sink + shop::serve(c, buf, sizeof(buf));
}
