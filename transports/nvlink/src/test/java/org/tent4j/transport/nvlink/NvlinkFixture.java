package org.tent4j.transport.nvlink;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.testkit.transport.TestSlice;
import org.tent4j.testkit.transport.TestTransportContext;

/** One engine's worth of nvlink under test: a context, the transport, and what it published. */
final class NvlinkFixture implements AutoCloseable {
    final TestTransportContext context;
    final NvlinkTransport transport;
    final List<BufferDescriptor> published = new ArrayList<>();

    /** The platforms this fixture opened in the engine's place; closed after the transport, as an engine does. */
    private final List<DevicePlatform> opened = new ArrayList<>();

    NvlinkFixture(String segment, String machine, List<DevicePlatformProvider> platforms, Map<String, String> options) {
        NvlinkTransportProvider provider = new NvlinkTransportProvider(() -> platforms);
        context = new TestTransportContext(segment, machine, NvlinkTransportProvider.ID, provider.options(), options,
                Duration.ofSeconds(10));
        for (DevicePlatformProvider p : platforms) {
            if (p.availability().isAvailable()) {
                opened.add(p.create());
            }
        }
        context.devicePlatforms(opened);
        transport = (NvlinkTransport) provider.create(context);
    }

    /** Registers {@code buffer} with nvlink and records what peers would see. */
    BufferDescriptor register(DeviceBuffer buffer) {
        Map<String, String> attributes = transport.registerBuffer(buffer).orElseThrow();
        BufferDescriptor d = buffer.describe(attributes);
        published.add(d);
        return d;
    }

    SegmentDescriptor descriptor(long version) {
        return SegmentDescriptor.builder().name(context.segmentName()).machineId(context.machineId())
                .host("127.0.0.1").controlPort(0).transports(List.of(NvlinkTransportProvider.ID))
                .transportAttributes(Map.of(NvlinkTransportProvider.ID, transport.segmentAttributes()))
                .buffers(published).version(version).build();
    }

    static TestSlice slice(Opcode op, LocalBuffer local, long localOffset, BufferDescriptor remote, long remoteOffset,
                           long length) {
        return new TestSlice(op, local, localOffset, remote, remote.address() + remoteOffset, length,
                System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
    }

    @Override
    public void close() {
        transport.close();
        opened.forEach(DevicePlatform::close);
        context.close();
    }
}
