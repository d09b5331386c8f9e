// LockPool.java — a JVM server's shape for tests/e2e/t_jvm_locks.sh (compiled there with javac into
// a temporary directory): a pool of idle worker threads (40, parked on their empty queue, as an
// application server's request pool is between bursts) beside three "connection" threads that
// each loop over a unit of work done inside a synchronized block, about 10 ms of CPU a unit.
//
//   java LockPool contend  — the three share one monitor: while one works, the other two wait to
//                            enter it (HotSpot's ObjectMonitor::enter), most of their time;
//   java LockPool own      — the control: each has its own monitor, nothing waits on a lock; the
//                            same threads, the same work, the same idle pool.
//
// It prints "ready" once every thread is started.
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadPoolExecutor;

public class LockPool {
    static volatile long sink; // the work's result is used: the JIT cannot drop it

    // About 10 ms of CPU: a checksum over rows, repeated until the clock says so.
    static long unitOfWork(long seed) {
        long end = System.nanoTime() + 10_000_000L, h = seed;
        while (System.nanoTime() < end)
            for (int i = 0; i < 10_000; i++)
                h = (h ^ i) * 1099511628211L;
        return h;
    }

    static void serveConnection(Object monitor) {
        for (long n = 0;; n++) {
            synchronized (monitor) {
                sink = unitOfWork(n);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        boolean shared = args.length > 0 && args[0].equals("contend");
        ExecutorService pool = Executors.newFixedThreadPool(40);
        ((ThreadPoolExecutor) pool).prestartAllCoreThreads();
        Object one = new Object();
        for (int i = 0; i < 3; i++) {
            Object monitor = shared ? one : new Object();
            Thread t = new Thread(() -> serveConnection(monitor), "connection-" + i);
            t.setDaemon(true);
            t.start();
        }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
