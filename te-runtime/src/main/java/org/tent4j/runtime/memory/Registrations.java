package org.tent4j.runtime.memory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalMemory;

/**
 * The engine's registered buffers, sorted by address so a lookup is a binary search over an immutable array:
 * readers (every request, every peer access) never lock or allocate; writers copy the array.
 */
public final class Registrations implements LocalMemory {
    private volatile RegisteredBuffer[] sorted = new RegisteredBuffer[0];

    synchronized void add(RegisteredBuffer b) {
        RegisteredBuffer[] cur = sorted;
        for (RegisteredBuffer r : cur) {
            if (b.address() < r.address() + r.length() && r.address() < b.address() + b.length()) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cannot register [0x" + Long.toHexString(b.address())
                        + ", +" + b.length() + "): it overlaps registered " + r);
            }
        }
        RegisteredBuffer[] next = Arrays.copyOf(cur, cur.length + 1);
        next[cur.length] = b;
        Arrays.sort(next, Comparator.comparingLong(RegisteredBuffer::address));
        sorted = next;
    }

    synchronized boolean remove(RegisteredBuffer b) {
        List<RegisteredBuffer> next = new ArrayList<>(Arrays.asList(sorted));
        boolean removed = next.remove(b);
        sorted = next.toArray(new RegisteredBuffer[0]);
        return removed;
    }

    RegisteredBuffer[] all() {
        return sorted;
    }

    /**
     * Slices in transports now, counted by the buffers they pin: 0 whenever nothing is in flight, so a count that stays
     * above 0 after every task ended is a leak (the {@code tent4j_buffer_pins} gauge).
     */
    public long pins() {
        long n = 0;
        for (RegisteredBuffer b : sorted) {
            n += b.pins();
        }
        return n;
    }

    @Override
    public RegisteredBuffer find(long address, long length) {
        RegisteredBuffer[] a = sorted;
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            RegisteredBuffer b = a[mid];
            if (address < b.address()) {
                hi = mid - 1;
            } else if (address - b.address() >= b.length()) {
                lo = mid + 1;
            } else {
                return b.contains(address, length) ? b : null;
            }
        }
        return null;
    }

    /** The registered buffer that starts at or contains {@code address}, ignoring length; for error messages. */
    public LocalBuffer containing(long address) {
        return find(address, 0);
    }
}
