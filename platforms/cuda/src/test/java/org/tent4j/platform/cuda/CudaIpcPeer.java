package org.tent4j.platform.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * The importing side of the two-process IPC tests, run in its own JVM:
 * {@code CudaIpcPeer <library|default> <hex handle> <size> <device> <expected crc> <write seed>}. It maps the handle,
 * checks the bytes against the expected CRC-32C, overwrites them with bytes from {@code write seed}, prints
 * {@code written=<crc>} and exits 0; exit 3 means the bytes it read were wrong.
 */
public final class CudaIpcPeer {
    private CudaIpcPeer() {
    }

    /** Runs the peer in a second JVM with this JVM's class path and returns its output; throws unless it exits 0. */
    public static String run(String library, byte[] handle, long size, int device, long expectedCrc, long seed)
            throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp", System.getProperty("java.class.path"),
                CudaIpcPeer.class.getName(), library, HexFormat.of().formatHex(handle), String.valueOf(size),
                String.valueOf(device), String.valueOf(expectedCrc), String.valueOf(seed));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("peer JVM timed out: " + out);
        }
        if (p.exitValue() != 0) {
            throw new AssertionError("peer JVM exited " + p.exitValue() + ": " + out);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        DevicePlatformProvider provider = args[0].equals("default") ? new CudaPlatformProvider()
                : new CudaPlatformProvider(List.of(Path.of(args[0]).toString()));
        byte[] handle = HexFormat.of().parseHex(args[1]);
        long size = Long.parseLong(args[2]);
        int device = Integer.parseInt(args[3]);
        long expected = Long.parseLong(args[4]);
        long seed = Long.parseLong(args[5]);
        try (DevicePlatform platform = provider.create(); Arena arena = Arena.ofConfined()) {
            MemorySegment mapped = platform.openIpcHandle(handle, size, device);
            MemorySegment host = arena.allocate(size, 64);
            platform.copy(host, mapped, size);
            long got = CudaPlatformFakeRuntimeTest.crc(host);
            if (got != expected) {
                System.out.println("read=" + got + " expected=" + expected);
                System.exit(3);
            }
            CudaPlatformFakeRuntimeTest.fill(host, seed);
            platform.copy(mapped, host, size);
            System.out.println("written=" + CudaPlatformFakeRuntimeTest.crc(host));
            platform.closeIpcMapping(mapped);
        }
        System.exit(0);
    }
}
