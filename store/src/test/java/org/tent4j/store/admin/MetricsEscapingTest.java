package org.tent4j.store.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.tent4j.store.PrintableId;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.rpc.RpcStats;

/** Hostile values (which mount validation refuses, handed in here past it) stay inside their series and lines. */
class MetricsEscapingTest {
    /** One sample line of the Prometheus text format: a name, labels with escaped values, a number. */
    private static final Pattern SAMPLE = Pattern.compile(
            "([a-z_]+)(\\{[a-z]+=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\"(?:,[a-z]+=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\")*})? -?[0-9.e+]+");
    private static final Pattern SEGMENT_LABEL = Pattern.compile("segment=\"((?:[^\"\\\\]|\\\\.)*)\"");

    @Test
    void aHostileSegmentIdStaysOneLinePerSeries() {
        String forged = "x\"} 1\nstore_objects 999\n# \\";
        StringBuilder sb = new StringBuilder();
        Metrics.segmentSeries(sb, List.of(new MasterState.SegmentView(forged, "e", "h\"\n", "c", 4096, 64, 1024, org.tent4j.store.Tier.MEMORY)));
        List<String> samples = samples(sb.toString());
        assertEquals(2, samples.size(), sb.toString());
        assertTrue(samples.getFirst().startsWith("store_segment_capacity_bytes{"), samples.getFirst());
        assertTrue(samples.get(1).startsWith("store_segment_used_bytes{"), samples.get(1));
        Matcher m = SEGMENT_LABEL.matcher(samples.getFirst());
        assertTrue(m.find());
        assertEquals(forged, m.group(1).replace("\\n", "\n").replace("\\\"", "\"").replace("\\\\", "\\"),
                "the label value reads back as the id");
    }

    @Test
    void everyLineOfARealMastersMetricsIsACommentOrOneSample() {
        try (StoreMaster master = new StoreMaster(MasterConfig.defaults(), org.tent4j.store.StoreClock.system())) {
            master.mount("node", new SegmentSpec("seg", "10.0.0.1:15000", "10.0.0.1", 4096, 1 << 20), 1L);
            String text = Metrics.render(master.state(), new RpcStats(), null, null);
            assertTrue(samples(text).stream().anyMatch(l -> l.startsWith("store_segment_used_bytes{segment=\"seg\"")), text);
        }
    }

    @Test
    void idsInLogLinesAreOneLine() {
        assertEquals("evil\\nEXPIRED victim", PrintableId.forLog("evil\nEXPIRED victim"));
        assertEquals("a\\\\n\\r\\u0000\\u00e9", PrintableId.forLog("a\\n\r\u0000é"));
        assertEquals("plain-id_1:2", PrintableId.forLog("plain-id_1:2"));
    }

    /** The sample lines; fails on any line that is neither a comment nor one well-formed sample. */
    private static List<String> samples(String text) {
        return text.lines().filter(l -> {
            if (l.startsWith("# HELP ") || l.startsWith("# TYPE ")) {
                return false;
            }
            assertTrue(SAMPLE.matcher(l).matches(), "not one sample: [" + l + "] in\n" + text);
            return true;
        }).toList();
    }
}
