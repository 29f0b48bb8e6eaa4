package org.tent4j.transport.tcp;

import java.lang.management.ManagementFactory;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * A few seconds of loopback traffic between two tcp transports in one JVM: throughput, how much payload was copied
 * rather than landed in place, and heap bytes allocated per slice (all threads). Not a test; run by hand:
 * {@code java -cp <test classpath> org.tent4j.transport.tcp.TcpThroughputProbe [seconds-per-case]}.
 */
public final class TcpThroughputProbe {
    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 1.5;
        String mode = args.length > 1 ? args[1] : "auto";
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        Map<String, String> options = Map.of("io_mode", mode);
        try (TcpFixture f = new TcpFixture(options, options)) {
            int size = 64 << 20;
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(size, 4096));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(size, 4096), Permission.READ_WRITE);
            TcpFixture.fillRandom(local.segment(), 1);
            System.out.printf("io_mode=%s netty unsafe=%s%n", f.a.ioMode(), io.netty.util.internal.PlatformDependent.hasUnsafe());
            try (PeerConnection conn = f.connect(remote)) {
                for (int sliceSize : new int[] {4 << 10, 64 << 10, 1 << 20, 16 << 20}) {
                    for (Opcode op : Opcode.values()) {
                        run(conn, local, remote, op, sliceSize, 0.5, threads, f, false); // warm-up
                        run(conn, local, remote, op, sliceSize, seconds, threads, f, true);
                    }
                }
            }
        }
    }

    /** Heap bytes allocated so far by the transports' Netty threads (both engines). */
    private static long eventLoopAllocated(com.sun.management.ThreadMXBean threads) {
        long sum = 0;
        for (var info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info != null && info.getThreadName().startsWith("tent4j-tcp-")) {
                sum += threads.getThreadAllocatedBytes(info.getThreadId());
            }
        }
        return sum;
    }

    private static void run(PeerConnection conn, TestLocalMemory.Buffer local, TestLocalMemory.Buffer remote,
                            Opcode op, int sliceSize, double seconds, com.sun.management.ThreadMXBean threads,
                            TcpFixture f, boolean report) {
        int window = Math.max(4, Math.min(256, (32 << 20) / sliceSize)); // keep ~32 MiB in flight
        int slots = (int) (local.length() / sliceSize);
        ArrayDeque<TestSlice> inFlight = new ArrayDeque<>();
        long landed0 = f.a.payloadBytesLanded() + f.b.payloadBytesLanded();
        long copied0 = f.a.payloadBytesCopied() + f.b.payloadBytesCopied();
        long alloc0 = threads.getTotalThreadAllocatedBytes();
        long loopAlloc0 = eventLoopAllocated(threads);
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long done = 0;
        long i = 0;
        while (System.nanoTime() < end || !inFlight.isEmpty()) {
            while (inFlight.size() < window && System.nanoTime() < end) {
                long off = (i++ % slots) * (long) sliceSize;
                TestSlice s = TcpFixture.slice(op, local, off, remote, off, sliceSize);
                inFlight.add(s);
                conn.post(s);
            }
            TestSlice s = inFlight.poll();
            try {
                s.result().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            done++;
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        long allocated = threads.getTotalThreadAllocatedBytes() - alloc0;
        long loopAllocated = eventLoopAllocated(threads) - loopAlloc0;
        long landed = f.a.payloadBytesLanded() + f.b.payloadBytesLanded() - landed0;
        long copied = f.a.payloadBytesCopied() + f.b.payloadBytesCopied() - copied0;
        if (report) {
            System.out.printf("%-5s %8d B slices: %7.2f GB/s %9.0f slices/s  copied %5.2f%% of payload  "
                            + "heap B/slice: %5.0f on tcp event loops, %5.0f all threads%n", op, sliceSize,
                    done * (double) sliceSize / elapsed / 1e9, done / elapsed,
                    100.0 * copied / Math.max(1, landed + copied), (double) loopAllocated / done,
                    (double) allocated / done);
        }
    }
}
