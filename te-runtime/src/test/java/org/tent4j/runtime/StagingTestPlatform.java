package org.tent4j.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.spi.platform.DeviceStream;
import org.tent4j.spi.platform.PointerInfo;

/**
 * A device platform for staging tests (issue 12): "npu" memory that no transport of the test engines can move (they
 * declare cpu->cpu only), whose copies are real byte copies. Its "device" is host memory, so the copies can be
 * checked; everything the staging path does not use is refused. Available only while a test switches it on, so the
 * other te-runtime tests see no device platform.
 */
public final class StagingTestPlatform implements DevicePlatformProvider {
    static volatile boolean enabled;
    static final AtomicLong COPIED = new AtomicLong();
    static final AtomicLong HOST_ALLOCATED = new AtomicLong();

    @Override public String id() { return "staging-test-npu"; }
    @Override public MemoryKind memoryKind() { return MemoryKind.NPU; }

    @Override
    public Availability availability() {
        return enabled ? Availability.available() : Availability.unavailable("switched off outside HostStagingTest");
    }

    @Override
    public DevicePlatform create() {
        return new DevicePlatform() {
            private final Map<Long, Arena> hosts = new ConcurrentHashMap<>();

            @Override public MemoryKind memoryKind() { return MemoryKind.NPU; }
            @Override public List<DeviceInfo> devices() { return List.of(DeviceInfo.of(0, "test npu", 1L << 30, "0000:00:00.0")); }

            @Override
            public MemorySegment allocate(int device, long size) {
                throw new UnsupportedOperationException("tests bring their own npu memory");
            }

            @Override
            public void free(MemorySegment deviceMemory) {
                throw new UnsupportedOperationException("tests bring their own npu memory");
            }

            @Override
            public MemorySegment allocateHost(long size) {
                Arena a = Arena.ofShared();
                MemorySegment m = a.allocate(size, 4096);
                hosts.put(m.address(), a);
                HOST_ALLOCATED.addAndGet(size);
                return m;
            }

            @Override
            public void freeHost(MemorySegment hostMemory) {
                Arena a = hosts.remove(hostMemory.address());
                if (a == null) {
                    throw new IllegalArgumentException("not allocated here: 0x" + Long.toHexString(hostMemory.address()));
                }
                HOST_ALLOCATED.addAndGet(-hostMemory.byteSize());
                a.close();
            }

            @Override
            public PointerInfo classify(long address) {
                return PointerInfo.of(hosts.containsKey(address) ? Location.CPU : Location.device(MemoryKind.NPU, 0), true);
            }

            @Override
            public void copy(MemorySegment dst, MemorySegment src, long length) {
                MemorySegment.copy(src, 0, dst, 0, length);
                COPIED.addAndGet(length);
            }

            @Override
            public DeviceStream createStream(int device) {
                throw new UnsupportedOperationException("staging copies synchronously");
            }

            @Override
            public byte[] exportIpcHandle(MemorySegment deviceMemory) {
                throw new UnsupportedOperationException("no IPC in staging tests");
            }

            @Override
            public MemorySegment openIpcHandle(byte[] handle, long size, int device) {
                throw new UnsupportedOperationException("no IPC in staging tests");
            }

            @Override
            public void closeIpcMapping(MemorySegment mapped) {
                throw new UnsupportedOperationException("no IPC in staging tests");
            }

            @Override
            public void close() {
            }
        };
    }
}
