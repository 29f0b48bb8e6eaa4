package org.tent4j.testkit.conformance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.testkit.ChildJvm;

/** The parent's handle on a {@link ConformancePeer} JVM. */
final class PeerProcess implements AutoCloseable {
    private final ChildJvm jvm;
    private final Path stderr;
    final SegmentDescriptor descriptor;
    final BufferDescriptor buffer;

    private PeerProcess(ChildJvm jvm, Path stderr, String transportId, String machineId, Duration startTimeout)
            throws InterruptedException {
        this.jvm = jvm;
        this.stderr = stderr;
        String[] f = answer("DESCRIPTOR", startTimeout).split(" ");
        long address = Long.parseLong(f[1]);
        long length = Long.parseLong(f[2]);
        Map<String, String> segmentAttributes = ConformancePeer.decode(f[3]);
        Map<String, String> bufferAttributes = ConformancePeer.decode(f[4]);
        this.buffer = BufferDescriptor.builder().address(address).length(length).location(Location.CPU)
                .permission(Permission.READ_WRITE).transports(List.of(transportId))
                .attributes(Map.of(transportId, bufferAttributes)).build();
        this.descriptor = SegmentDescriptor.builder().name(ConformancePeer.SEGMENT).machineId(machineId)
                .host(TransportUnderTest.HOST).controlPort(0).transports(List.of(transportId))
                .transportAttributes(Map.of(transportId, segmentAttributes)).buffers(List.of(buffer)).version(1)
                .build();
    }

    static PeerProcess start(String providerClass, String transportId, String machineId, long size,
                             Duration transferTimeout, Map<String, String> options, List<String> jvmOptions,
                             Path workDir) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of(providerClass, machineId, Long.toString(size),
                Long.toString(transferTimeout.toMillis())));
        options.forEach((k, v) -> args.add(k + "=" + v));
        Path stderr = Files.createTempFile(workDir, "conformance-peer", ".err");
        ChildJvm jvm = ChildJvm.builder(ConformancePeer.class).jvmOptions(jvmOptions).args(args).stderr(stderr).start();
        try {
            return new PeerProcess(jvm, stderr, transportId, machineId, Duration.ofSeconds(60));
        } catch (InterruptedException | RuntimeException | AssertionError e) {
            jvm.kill();
            throw e;
        }
    }

    /** CRC32C of a range of the peer's buffer, computed by the peer. */
    long crc32c(long offset, long length) throws InterruptedException {
        jvm.send("CRC " + offset + " " + length);
        return Long.parseUnsignedLong(answer("CRC", Duration.ofSeconds(30)).split(" ")[1], 16);
    }

    /** Kills the peer without letting it close anything: a crash, as its peers see it. */
    void kill() throws InterruptedException {
        jvm.kill();
    }

    /** The peer's next answer (its lines without {@link ConformancePeer#PREFIX} are its log), which must be a {@code kind}. */
    private String answer(String kind, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String line;
        try {
            line = jvm.awaitLine(ConformancePeer.PREFIX, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))
                    .substring(ConformancePeer.PREFIX.length());
        } catch (IOException e) {
            throw new AssertionError("the conformance peer JVM did not answer " + kind + ": " + e.getMessage(), e);
        }
        if (!line.startsWith(kind)) {
            throw new AssertionError("the conformance peer JVM answered '" + line + "' instead of " + kind
                    + "; its stderr:\n" + jvm.stderrTail());
        }
        return line;
    }

    @Override
    public void close() throws InterruptedException {
        jvm.close();
        try {
            Files.deleteIfExists(stderr);
        } catch (IOException ignored) {
            // a temp file; the test's temp directory goes anyway
        }
    }
}
