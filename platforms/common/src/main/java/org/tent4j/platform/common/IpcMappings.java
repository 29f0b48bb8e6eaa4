package org.tent4j.platform.common;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The IPC handles a platform has opened, reference-counted: a runtime maps one handle once per process and device
 * (opening it twice fails or leaks), so repeated opens share the first mapping and the last close unmaps it.
 *
 * <p>A handle is named by a key that includes the device ({@code "0:" + handle bytes in hex}); an opened handle gives
 * a base address, and each open hands out {@code base + offset} (the offset of the exported range inside its block).
 * Opening and closing are rare and never on a data path, so one lock guards everything, native calls included: two
 * threads must not open the same handle at once.
 */
public final class IpcMappings {
    /** Opens a handle natively and returns the base address it is mapped at; throws on failure. */
    @FunctionalInterface
    public interface Opener {
        long open();
    }

    /** Unmaps an opened handle natively; throws on failure. */
    @FunctionalInterface
    public interface Closer {
        void close(String key, long base, int device);
    }

    private static final class Opened {
        final long base;
        final int device;
        int references;

        Opened(long base, int device) {
            this.base = base;
            this.device = device;
        }
    }

    private static final class Mapping {
        final String key;
        int references;

        Mapping(String key) {
            this.key = key;
        }
    }

    private final Object lock = new Object();
    private final Map<String, Opened> opened = new HashMap<>();
    /** Addresses handed out by {@link #open} → the handle they came from and how often handed out. */
    private final Map<Long, Mapping> mappings = new HashMap<>();
    private final Closer closer;

    /** {@code closer} unmaps a handle when its last mapping is closed. */
    public IpcMappings(Closer closer) {
        this.closer = closer;
    }

    /**
     * Maps handle {@code key} on {@code device} (through {@code opener} the first time) and returns
     * {@code size} bytes at {@code offset} into it.
     */
    public MemorySegment open(String key, int device, long offset, long size, Opener opener) {
        synchronized (lock) {
            Opened o = opened.get(key);
            if (o == null) {
                o = new Opened(opener.open(), device);
                opened.put(key, o);
            }
            o.references++;
            long address = o.base + offset;
            mappings.computeIfAbsent(address, a -> new Mapping(key)).references++;
            return MemorySegment.ofAddress(address).reinterpret(size);
        }
    }

    /**
     * Gives back one {@link #open} of {@code address}; the handle's last one unmaps it.
     *
     * @return {@code false} if {@code address} is not a mapping handed out here (the caller refuses it)
     */
    public boolean close(long address) {
        synchronized (lock) {
            Mapping mapping = mappings.get(address);
            if (mapping == null) {
                return false;
            }
            if (--mapping.references == 0) {
                mappings.remove(address);
            }
            Opened o = opened.get(mapping.key);
            if (--o.references == 0) {
                opened.remove(mapping.key);
                closer.close(mapping.key, o.base, o.device);
            }
            return true;
        }
    }

    /** Platform close: unmaps every handle still open, each through {@code each} (which should not throw). */
    public void closeAll(Closer each) {
        synchronized (lock) {
            List<Map.Entry<String, Opened>> all = new ArrayList<>(opened.entrySet());
            opened.clear();
            mappings.clear();
            for (Map.Entry<String, Opened> e : all) {
                each.close(e.getKey(), e.getValue().base, e.getValue().device);
            }
        }
    }

    /** Handles opened now (not mappings: several mappings may share one). */
    public int openHandleCount() {
        synchronized (lock) {
            return opened.size();
        }
    }
}
