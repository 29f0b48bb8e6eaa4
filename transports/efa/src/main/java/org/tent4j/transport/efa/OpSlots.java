package org.tent4j.transport.efa;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ArrayBlockingQueue;

import org.tent4j.spi.Slice;

/**
 * The operation slots of one transport, preallocated: their contexts in one native block (so a completion's context
 * maps back to its slot by address arithmetic) and the free list posters take them from. The block lives in the
 * progress thread's arena, freed once the provider holds no context any more.
 */
final class OpSlots {
    private final OpSlot[] slots;
    private final long contextBase;
    private final ArrayBlockingQueue<OpSlot> free;

    OpSlots(Arena arena, int count) {
        MemorySegment contexts = arena.allocate(FiAbi.CONTEXT_SIZE * count, FiAbi.CONTEXT_SIZE);
        this.contextBase = contexts.address();
        this.slots = new OpSlot[count];
        this.free = new ArrayBlockingQueue<>(count);
        for (int i = 0; i < count; i++) {
            slots[i] = new OpSlot(i, contexts.asSlice(i * FiAbi.CONTEXT_SIZE, FiAbi.CONTEXT_SIZE));
            free.add(slots[i]);
        }
    }

    /** Every slot, by index. */
    OpSlot[] all() {
        return slots;
    }

    /** The free list: posters take slots from it, the progress thread puts them back. */
    ArrayBlockingQueue<OpSlot> free() {
        return free;
    }

    /** The slot whose context is at {@code ctx}, or null when it is no slot's. */
    OpSlot of(long ctx) {
        long off = ctx - contextBase;
        if (off < 0 || off % FiAbi.CONTEXT_SIZE != 0 || off / FiAbi.CONTEXT_SIZE >= slots.length) {
            return null;
        }
        return slots[(int) (off / FiAbi.CONTEXT_SIZE)];
    }

    /** The state of the slot carrying {@code slice}, or -1 when none does (see {@link FabricProgress#slotState}). */
    int stateOf(Slice slice) {
        for (OpSlot slot : slots) {
            int state = slot.state;
            if (slot.slice == slice) {
                return state;
            }
        }
        return -1;
    }

    /** Whether every slot is back in the free list. */
    boolean allFree() {
        return free.size() == slots.length;
    }
}
