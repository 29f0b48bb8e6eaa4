package org.tent4j.integration.nixl;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** Descriptors of one memory type, the unit of registration, metadata selection and transfer requests. */
public record DescriptorList(MemoryType type, List<Descriptor> descriptors) {
    public DescriptorList {
        Objects.requireNonNull(type, "memory type");
        descriptors = List.copyOf(descriptors);
    }

    public static DescriptorList of(MemoryType type, Descriptor... descriptors) {
        return new DescriptorList(type, List.of(descriptors));
    }

    /** Host memory segments as a DRAM list. */
    public static DescriptorList dram(MemorySegment... segments) {
        List<Descriptor> out = new ArrayList<>(segments.length);
        for (MemorySegment s : segments) {
            if (!s.isNative()) {
                throw new NixlException(NixlStatus.INVALID_PARAM, "a DRAM descriptor needs native (off-heap) memory, got a heap segment");
            }
            out.add(new Descriptor(s.address(), s.byteSize(), 0));
        }
        return new DescriptorList(MemoryType.DRAM, out);
    }

    /** {@code count} blocks of {@code blockSize} bytes laid end to end from {@code base} (a KV-cache layout). */
    public static DescriptorList blocks(MemoryType type, long base, long blockSize, int count, int devId) {
        List<Descriptor> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(new Descriptor(base + i * blockSize, blockSize, devId));
        }
        return new DescriptorList(type, out);
    }

    public int size() {
        return descriptors.size();
    }

    public Descriptor get(int i) {
        return descriptors.get(i);
    }
}
