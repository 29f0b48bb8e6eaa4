package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.Outcome;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;

/**
 * One client's put/get load on a thread of its own, for the failover tests: single puts and batches of
 * {@value #BATCH} in turn, of small random values under {@code prefix0, prefix1, ...}, each recorded with its CRC32C,
 * when it started and whether it was acknowledged; after each, a read of an earlier acknowledged value, its CRC checked. A put that throws is recorded, not
 * retried (its key is never used again), so the test can tell what the store may hold: exactly the acknowledged
 * values, and of the others nothing or the whole value.
 */
final class PutGetLoad implements Runnable {
    /** Kinds of answer that mean a key holds no readable value (a put that failed may leave one in flight). */
    static final int BATCH = 8;
    private static final int READ_BATCH = 64;
    static final Set<StoreError> ABSENT = Set.of(StoreError.OBJECT_NOT_FOUND, StoreError.REPLICA_IS_NOT_READY,
            StoreError.OBJECT_IN_FLIGHT);

    /** One put: {@code ackNanos} is -1 when the put threw. */
    record Put(String key, byte[] value, int crc, long startNanos, long ackNanos) {
        boolean acknowledged() {
            return ackNanos >= 0;
        }
    }

    private final StoreClient client;
    private final String prefix;
    private final Random rnd;
    private final int maxBytes;
    private final List<Put> puts = new ArrayList<>();
    /** What went wrong that must fail the test: a read of wrong bytes, an answer other than STORED. */
    private final ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    private final AtomicInteger acknowledged = new AtomicInteger();
    private final AtomicInteger failedGets = new AtomicInteger();
    private volatile boolean stop;

    PutGetLoad(StoreClient client, String prefix, long seed, int maxBytes) {
        this.client = client;
        this.prefix = prefix;
        this.rnd = new Random(seed);
        this.maxBytes = maxBytes;
    }

    @Override
    public void run() {
        try {
            for (int step = 0, next = 0; !stop; step++) {
                // single puts (one Commit into a reservation) and batches of 8 in turn
                int n = (step & 1) == 0 ? 1 : BATCH;
                put(next, n);
                next += n;
                getAnEarlierOne();
            }
        } catch (RuntimeException | Error e) {
            wrong.add("the load's thread died: " + e);
            throw e;
        }
    }

    private void put(int first, int n) {
        List<String> keys = new ArrayList<>(n);
        List<byte[]> values = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            byte[] v = new byte[1 + rnd.nextInt(maxBytes)];
            rnd.nextBytes(v);
            keys.add(prefix + (first + i));
            values.add(v);
        }
        long start = System.nanoTime();
        List<Outcome<PutResult>> out;
        try {
            out = n == 1 ? List.of(Outcome.of(client.put(keys.getFirst(), values.getFirst(), ReplicateConfig.replicas(1))))
                    : client.putBatch(keys, values, ReplicateConfig.replicas(1));
        } catch (StoreException e) {
            // none acknowledged: each key may hold nothing or its whole value, which the test checks at the end
            out = java.util.Collections.nCopies(n, Outcome.failed(e));
        }
        long ack = System.nanoTime();
        List<Put> made = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Outcome<PutResult> o = out.get(i);
            boolean stored = o.ok() && o.value().status() == PutResult.Status.STORED;
            if (o.ok() && !stored) {
                // every key is put once: anything but STORED means a put was applied twice or another's bytes seen
                wrong.add(keys.get(i) + ": put answered " + o.value().status());
            }
            made.add(new Put(keys.get(i), values.get(i), crc(values.get(i)), start, stored ? ack : -1));
        }
        synchronized (puts) {
            puts.addAll(made);
        }
        acknowledged.addAndGet((int) made.stream().filter(Put::acknowledged).count());
    }

    private void getAnEarlierOne() {
        Put p;
        synchronized (puts) {
            p = puts.get(rnd.nextInt(puts.size()));
        }
        if (!p.acknowledged()) {
            return;
        }
        try {
            byte[] got = client.get(p.key());
            if (got.length != p.value().length || crc(got) != p.crc()) {
                wrong.add(p.key() + ": read " + got.length + " bytes of CRC " + crc(got) + " during the load, put "
                        + p.value().length + " of CRC " + p.crc());
            }
        } catch (StoreException e) {
            // a get that broke with the leader is not a lost object: every acknowledged put is read again at the end
            failedGets.incrementAndGet();
        }
    }

    void stop() {
        stop = true;
    }

    int acknowledged() {
        return acknowledged.get();
    }

    int failedGets() {
        return failedGets.get();
    }

    /** Every put so far, in the order made. */
    List<Put> puts() {
        synchronized (puts) {
            return List.copyOf(puts);
        }
    }

    /** Fails naming every wrong read and answer seen during the load. */
    void assertNothingWrong() {
        assertTrue(wrong.isEmpty(), prefix + ": " + wrong);
    }

    /**
     * Reads back every put of this load (in batches, one log entry each): an acknowledged one must be there with its
     * bytes, one that threw must be absent or there with exactly its bytes. Returns how many unacknowledged puts turned
     * out stored.
     */
    int assertReadBack(StoreClient reader) {
        int landed = 0;
        List<Put> all = puts();
        for (int from = 0; from < all.size(); from += READ_BATCH) {
            List<Put> chunk = all.subList(from, Math.min(all.size(), from + READ_BATCH));
            List<Outcome<byte[]>> got = reader.getBatch(chunk.stream().map(Put::key).toList());
            for (int i = 0; i < chunk.size(); i++) {
                Put p = chunk.get(i);
                Outcome<byte[]> o = got.get(i);
                if (!o.ok()) {
                    assertTrue(!p.acknowledged(), p.key() + " was acknowledged and is lost: " + o.error());
                    assertTrue(ABSENT.contains(o.error().error()), p.key() + " (put threw) is neither absent nor readable: "
                            + o.error());
                    continue;
                }
                assertEquals(p.value().length, o.value().length, p.key() + ": length read back");
                assertEquals(p.crc(), crc(o.value()), p.key() + ": CRC32C read back"
                        + (p.acknowledged() ? "" : " (its put threw: it must be absent or whole)"));
                landed += p.acknowledged() ? 0 : 1;
            }
        }
        return landed;
    }

    static int crc(byte[] b) {
        CRC32C c = new CRC32C();
        c.update(b);
        return (int) c.getValue();
    }
}
