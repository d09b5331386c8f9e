// HotRows.java — a JVM service for tests/e2e/t_jit.sh (compiled there with javac into a temporary
// directory): its CPU goes to one named method, HotRows.checksumRows(int[]), called in a loop
// over an array of rows, so that the JIT compiles it (C2, tier 4) within a second or two; the test
// keeps it out of main (-XX:CompileCommand=dontinline), so that it stays a method of its own.
public class HotRows {
    static volatile int sink; // the checksums are used: the JIT cannot drop the calls

    static int checksumRows(int[] rows) {
        int h = 0x811c9dc5;
        for (int i = 0; i < rows.length; i++)
            h = (h ^ rows[i]) * 16777619;
        return h;
    }

    public static void main(String[] args) {
        int[] rows = new int[1 << 16];
        for (int i = 0; i < rows.length; i++)
            rows[i] = i * 7;
        for (;;)
            sink = checksumRows(rows);
    }
}
