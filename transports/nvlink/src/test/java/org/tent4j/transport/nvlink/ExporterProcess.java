package org.tent4j.transport.nvlink;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/** Drives an {@link NvlinkExporterProcess} in a second JVM. */
final class ExporterProcess implements AutoCloseable {
    private final Process process;
    private final BufferedReader out;
    private final Writer in;
    final BufferDescriptor buffer;
    final SegmentDescriptor descriptor;
    private final List<String> transcript = new ArrayList<>();

    ExporterProcess(String library, long size, long seed, int device) throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-cp", System.getProperty("java.class.path"),
                NvlinkExporterProcess.class.getName(), library, String.valueOf(size), String.valueOf(seed),
                String.valueOf(device));
        process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Map<String, String> attributes = new HashMap<>();
        long address = 0;
        long length = 0;
        int dev = 0;
        String pid = null;
        for (String line; (line = out.readLine()) != null && !line.equals("ready"); ) {
            transcript.add(line);
            String[] p = line.split(" ", 3);
            switch (p[0]) {
                case "attr" -> attributes.put(p[1], p[2]);
                case "buffer" -> {
                    String[] b = line.split(" ");
                    address = Long.parseUnsignedLong(b[1], 16);
                    length = Long.parseLong(b[2]);
                    dev = Integer.parseInt(b[3]);
                }
                case "pid" -> pid = p[1];
                default -> { }
            }
        }
        if (pid == null) {
            process.destroyForcibly();
            throw new AssertionError("exporter JVM did not start: " + transcript);
        }
        buffer = BufferDescriptor.builder().address(address).length(length)
                .location(Location.device(MemoryKind.CUDA, dev)).permission(Permission.READ_WRITE)
                .transports(List.of(NvlinkTransportProvider.ID))
                .attributes(Map.of(NvlinkTransportProvider.ID, Map.copyOf(attributes))).build();
        descriptor = SegmentDescriptor.builder().name("seg-exporter").machineId("machine-1").host("127.0.0.1")
                .controlPort(0).transports(List.of(NvlinkTransportProvider.ID))
                .transportAttributes(Map.of(NvlinkTransportProvider.ID, Map.of(NvlinkTransport.PID, pid, NvlinkTransport.PLATFORMS, "cuda")))
                .buffers(List.of(buffer)).version(1).build();
    }

    /** CRC-32C of {@code [offset, offset + length)} of the exporter's buffer, as the exporter reads it. */
    long crc(long offset, long length) throws Exception {
        in.write("check " + offset + " " + length + "\n");
        in.flush();
        String line = out.readLine();
        if (line == null || !line.startsWith("crc ")) {
            throw new AssertionError("exporter answered " + line);
        }
        return Long.parseLong(line.substring(4));
    }

    @Override
    public void close() throws Exception {
        try {
            in.write("exit\n");
            in.flush();
        } catch (java.io.IOException ignored) {
            // already gone
        }
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
