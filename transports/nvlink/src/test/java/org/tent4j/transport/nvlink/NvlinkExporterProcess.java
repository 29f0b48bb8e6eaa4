package org.tent4j.transport.nvlink;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.platform.cuda.CudaPlatformProvider;
import org.tent4j.platform.cuda.FakeCudaRuntime;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/**
 * The exporting engine of the two-process tests, in its own JVM: {@code <library|default> <size> <seed> <device>}.
 * It allocates device memory, fills it from {@code seed}, registers it with its own nvlink transport and prints what
 * peers need ({@code attr <key> <value>}, {@code buffer <hex address> <length> <device>}, {@code pid <pid>},
 * {@code ready}). Then it answers {@code check <offset> <length>} with {@code crc <CRC-32C of that range>} until
 * {@code exit}.
 */
public final class NvlinkExporterProcess {
    private NvlinkExporterProcess() {
    }

    public static void main(String[] args) throws Exception {
        List<DevicePlatformProvider> platforms = List.of(args[0].equals("default") ? new CudaPlatformProvider()
                : FakeCudaRuntime.provider(Path.of(args[0])));
        long size = Long.parseLong(args[1]);
        long seed = Long.parseLong(args[2]);
        int device = Integer.parseInt(args[3]);
        try (NvlinkFixture exporter = new NvlinkFixture("seg-exporter", "machine-1", platforms, Map.of());
             DevicePlatform platform = platforms.get(0).create(); Arena arena = Arena.ofConfined()) {
            MemorySegment memory = platform.allocate(device, size);
            MemorySegment host = arena.allocate(size, 64);
            Checksums.fill(host, seed);
            platform.copy(memory, host, size);
            BufferDescriptor d = exporter.register(new DeviceBuffer(1, memory, Location.device(MemoryKind.CUDA, device),
                    Permission.READ_WRITE));
            d.attributes(NvlinkTransportProvider.ID).forEach((k, v) -> System.out.println("attr " + k + " " + v));
            System.out.println("buffer " + Long.toHexString(d.address()) + " " + d.length() + " " + device);
            System.out.println("pid " + exporter.transport.segmentAttributes().get(NvlinkTransport.PID));
            System.out.println("ready");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null && !line.equals("exit"); ) {
                String[] p = line.split(" ");
                long off = Long.parseLong(p[1]);
                long len = Long.parseLong(p[2]);
                MemorySegment range = arena.allocate(len, 64);
                platform.copy(range, memory.asSlice(off, len), len);
                System.out.println("crc " + Checksums.crc(range));
                System.out.flush();
            }
            platform.free(memory);
        }
        System.exit(0);
    }
}
