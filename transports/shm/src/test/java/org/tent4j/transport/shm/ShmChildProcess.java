package org.tent4j.transport.shm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.MemoryAllocator.Allocation;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * The peer process of {@link ShmCrossProcessTest}: allocates shm memory, fills it with a pattern, prints
 * {@code READY <path> <size> <offset> <address>}, then waits for {@code VERIFY <offset> <length> <crc>} on stdin,
 * checks those bytes and exits 0 if they match (3 if not). Closing its transport deletes the file.
 */
public final class ShmChildProcess {
    static final long PATTERN_SEED = 0xC0FFEE;

    private ShmChildProcess() {
    }

    public static void main(String[] args) throws Exception {
        String dir = args[0];
        long size = Long.parseLong(args[1]);
        ShmTransportProvider provider = new ShmTransportProvider();
        int status;
        try (TestTransportContext ctx = new TestTransportContext("child", ShmTransportTest.MACHINE, ShmTransportProvider.ID,
                provider.options(), Map.of("dir", dir), Duration.ofSeconds(30));
             Transport transport = provider.create(ctx)) {
            Allocation alloc = transport.allocator().orElseThrow().allocate(size, Location.CPU);
            Patterns.fill(alloc.segment(), 0, size, PATTERN_SEED);
            TestLocalMemory.Buffer buffer = ctx.memory().register(alloc.segment(), Permission.READ_WRITE, alloc.backing());
            Map<String, String> attrs = transport.registerBuffer(buffer).orElseThrow();
            System.out.println("READY " + attrs.get("path") + " " + attrs.get("size") + " " + attrs.get("offset") + " "
                    + buffer.address());
            System.out.flush();

            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
            String line = in.readLine();
            if (line == null || !line.startsWith("VERIFY ")) {
                System.out.println("PROTOCOL " + line);
                status = 2;
            } else {
                String[] f = line.split(" ");
                long offset = Long.parseLong(f[1]);
                long length = Long.parseLong(f[2]);
                long expected = Long.parseLong(f[3]);
                long actual = Patterns.crc(alloc.segment(), offset, length);
                // bytes outside the written range must still be the child's own pattern
                long before = Patterns.crc(alloc.segment(), 0, offset);
                boolean untouched = before == Patterns.crcOfPattern(offset, PATTERN_SEED);
                if (actual == expected && untouched) {
                    System.out.println("VERIFIED");
                    status = 0;
                } else {
                    System.out.println("MISMATCH expected " + expected + " got " + actual + " prefix intact " + untouched);
                    status = 3;
                }
            }
            System.out.flush();
        }
        System.exit(status);
    }
}
