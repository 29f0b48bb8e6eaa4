package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * The most read keys, for the status page: a sample of the reads, counted per key. A metric, not state: the draw is
 * not replayed, and neither snapshots nor replays carry it.
 */
final class HotKeys {
    /**
     * One read in this many is counted, as this many: a key worth a place on the page is read thousands of times a
     * second, and a sample of one in four cost a get flood a tenth of the master's time in new map entries and trims.
     */
    private static final int SAMPLING = 32;
    /** Above this many keys a trim forgets the less read half. */
    private static final int LIMIT = 4096;
    private final ConcurrentHashMap<String, LongAdder> readCounts = new ConcurrentHashMap<>();

    /** Counts the read of {@code key} if the draw picks it. */
    void sample(String key) {
        if (ThreadLocalRandom.current().nextInt(SAMPLING) == 0) {
            readCounts.computeIfAbsent(key, k -> new LongAdder()).add(SAMPLING);
        }
    }

    /**
     * Over {@link #LIMIT} keys, forgets the less read half, so the map stays bounded whatever the key space. Off the
     * ordering point (housekeeping calls it): a sort of thousands of counts would hold every command up.
     */
    void trim() {
        if (readCounts.size() > LIMIT) {
            List<Map.Entry<String, LongAdder>> all = new ArrayList<>(readCounts.entrySet());
            all.sort(Comparator.comparingLong(e -> e.getValue().sum()));
            for (int i = 0; i < all.size() / 2; i++) {
                readCounts.remove(all.get(i).getKey());
            }
        }
    }

    /** The {@code limit} most read keys, most read first, with their estimated reads. */
    List<Map.Entry<String, Long>> top(int limit) {
        return readCounts.entrySet().stream().map(e -> Map.entry(e.getKey(), e.getValue().sum()))
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(limit).toList();
    }
}
