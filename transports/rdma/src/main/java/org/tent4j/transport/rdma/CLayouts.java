package org.tent4j.transport.rdma;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * How {@link Verbs} writes C types as FFM layouts on LP64 Linux: fixed-width members named as in C, structs and unions
 * padded to natural alignment as a C compiler pads them, opaque glibc pthread objects, and offsets of nested fields.
 */
final class CLayouts {
    private CLayouts() {
    }

    static boolean isAarch64() {
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        return arch.equals("aarch64") || arch.equals("arm64");
    }

    static MemoryLayout u8(String name) {
        return JAVA_BYTE.withName(name);
    }

    static MemoryLayout u16(String name) {
        return JAVA_SHORT.withName(name);
    }

    static MemoryLayout u32(String name) {
        return JAVA_INT.withName(name);
    }

    static MemoryLayout u64(String name) {
        return JAVA_LONG.withName(name);
    }

    static MemoryLayout ptr(String name) {
        return ADDRESS.withName(name);
    }

    /** An opaque, 8-byte aligned glibc pthread object. */
    static MemoryLayout pthread(String name, int size) {
        return MemoryLayout.sequenceLayout(size / 8, JAVA_LONG).withName(name);
    }

    /** A C struct: members in order, each at its natural alignment, the whole padded to its largest alignment. */
    static StructLayout struct(String name, MemoryLayout... members) {
        List<MemoryLayout> laid = new ArrayList<>();
        long offset = 0;
        long maxAlign = 1;
        for (MemoryLayout m : members) {
            long align = m.byteAlignment();
            long pad = (align - offset % align) % align;
            if (pad > 0) {
                laid.add(MemoryLayout.paddingLayout(pad));
                offset += pad;
            }
            laid.add(m);
            offset += m.byteSize();
            maxAlign = Math.max(maxAlign, align);
        }
        long tail = (maxAlign - offset % maxAlign) % maxAlign;
        if (tail > 0) {
            laid.add(MemoryLayout.paddingLayout(tail));
        }
        StructLayout s = MemoryLayout.structLayout(laid.toArray(MemoryLayout[]::new));
        return name == null ? s : s.withName(name);
    }

    /** A C union; {@code name == null} is an anonymous union whose members C addresses directly. */
    static UnionLayout union(String name, MemoryLayout... members) {
        long maxAlign = Arrays.stream(members).mapToLong(MemoryLayout::byteAlignment).max().orElse(1);
        long size = Arrays.stream(members).mapToLong(MemoryLayout::byteSize).max().orElse(0);
        MemoryLayout[] all = members;
        if (size % maxAlign != 0) {
            // pads the union to its alignment, as C does, through a padding-only member
            all = Arrays.copyOf(members, members.length + 1);
            all[members.length] = MemoryLayout.paddingLayout(size + (maxAlign - size % maxAlign));
        }
        UnionLayout u = MemoryLayout.unionLayout(all);
        return name == null ? u : u.withName(name);
    }

    /** Offset of a (possibly nested) named field. */
    static long off(GroupLayout layout, String... path) {
        PathElement[] elements = new PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            elements[i] = PathElement.groupElement(path[i]);
        }
        return layout.byteOffset(elements);
    }
}
