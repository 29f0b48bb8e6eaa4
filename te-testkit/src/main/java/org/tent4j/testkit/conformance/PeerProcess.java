package org.tent4j.testkit.conformance;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/** The parent's handle on a {@link ConformancePeer} JVM. */
final class PeerProcess implements AutoCloseable {
    private static final String EOF = "\0eof";

    private final Process process;
    private final Path stderr;
    private final PrintWriter commands;
    private final LinkedBlockingQueue<String> answers = new LinkedBlockingQueue<>();
    final SegmentDescriptor descriptor;
    final BufferDescriptor buffer;

    private PeerProcess(Process process, Path stderr, String transportId, String machineId, Duration startTimeout)
            throws IOException, InterruptedException {
        this.process = process;
        this.stderr = stderr;
        this.commands = new PrintWriter(process.outputWriter(StandardCharsets.UTF_8), true);
        BufferedReader out = process.inputReader(StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("conformance-peer-stdout").start(() -> {
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    if (line.startsWith(ConformancePeer.PREFIX)) {
                        answers.add(line.substring(ConformancePeer.PREFIX.length()));
                    }
                }
            } catch (IOException ignored) {
                // the peer died: the EOF marker below tells whoever waits
            }
            answers.add(EOF);
        });
        String[] f = answer("DESCRIPTOR", startTimeout).split(" ");
        long address = Long.parseLong(f[1]);
        long length = Long.parseLong(f[2]);
        Map<String, String> segmentAttributes = ConformancePeer.decode(f[3]);
        Map<String, String> bufferAttributes = ConformancePeer.decode(f[4]);
        this.buffer = new BufferDescriptor(address, length, Location.CPU, Permission.READ_WRITE, List.of(transportId),
                Map.of(transportId, bufferAttributes));
        this.descriptor = new SegmentDescriptor(ConformancePeer.SEGMENT, machineId, TransportUnderTest.HOST, 0,
                List.of(transportId), Map.of(transportId, segmentAttributes), List.of(buffer), 1);
    }

    static PeerProcess start(String providerClass, String transportId, String machineId, long size,
                             Duration transferTimeout, Map<String, String> options, List<String> jvmOptions,
                             Path workDir) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ConformancePeer.class.getName());
        cmd.add(providerClass);
        cmd.add(machineId);
        cmd.add(Long.toString(size));
        cmd.add(Long.toString(transferTimeout.toMillis()));
        options.forEach((k, v) -> cmd.add(k + "=" + v));
        Path stderr = Files.createTempFile(workDir, "conformance-peer", ".err");
        Process p = new ProcessBuilder(cmd).redirectError(stderr.toFile()).start();
        try {
            return new PeerProcess(p, stderr, transportId, machineId, Duration.ofSeconds(60));
        } catch (IOException | InterruptedException | RuntimeException | AssertionError e) {
            p.destroyForcibly();
            throw e;
        }
    }

    /** CRC32C of a range of the peer's buffer, computed by the peer. */
    long crc32c(long offset, long length) throws InterruptedException {
        commands.println("CRC " + offset + " " + length);
        return Long.parseUnsignedLong(answer("CRC", Duration.ofSeconds(30)).split(" ")[1], 16);
    }

    /** Kills the peer without letting it close anything: a crash, as its peers see it. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    private String answer(String kind, Duration timeout) throws InterruptedException {
        String line = answers.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (line == null || line.equals(EOF) || !line.startsWith(kind)) {
            throw new AssertionError("the conformance peer JVM did not answer " + kind + " ("
                    + (line == null ? "no answer within " + timeout : line.equals(EOF) ? "it exited" : "got '" + line + "'")
                    + "); its stderr:\n" + stderr());
        }
        return line;
    }

    String stderr() {
        try {
            String text = Files.readString(stderr);
            return text.length() > 8000 ? "..." + text.substring(text.length() - 8000) : text;
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            commands.println("EXIT");
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
        try {
            Files.deleteIfExists(stderr);
        } catch (IOException ignored) {
            // a temp file; the test's temp directory goes anyway
        }
    }
}
