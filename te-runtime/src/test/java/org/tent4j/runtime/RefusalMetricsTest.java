package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;

/** A control-plane refusal is a metric as well as a log line, so a flood of them shows on a dashboard. */
class RefusalMetricsTest {

    @Test
    void aPeerWithoutTheTokenIsCountedAsAnAuthFailure() {
        try (TransferEngine guarded = TransferEngine.create(EngineTest.cfg().set("security.token", "s3cret-token-for-tests").build());
             TransferEngine stranger = TransferEngine.create(EngineTest.cfg().build())) {
            String before = ((TransferEngineImpl) guarded).metrics().scrape();
            assertTrue(count(before, "tent4j_control_auth_failures_total") == 0, before);
            assertTrue(before.contains("tent4j_control_refused_total{") && before.contains("what=\"connection\""), before);
            assertTrue(count(before, "tent4j_control_request_budget_refusals_total") == 0, before);
            assertTrue(count(before, "tent4j_control_request_bytes") == 0, before);

            assertThrows(TransferException.class, () -> stranger.openSegment(guarded.segmentName()));

            // The stranger gives up as soon as it sees the challenge; the guarded side counts the failure when it sees
            // the stranger hang up, which may be later: wait for that (bounded), never sleep.
            long deadline = System.nanoTime() + 10_000_000_000L;
            String after = ((TransferEngineImpl) guarded).metrics().scrape();
            while (count(after, "tent4j_control_auth_failures_total") < 1 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
                after = ((TransferEngineImpl) guarded).metrics().scrape();
            }
            assertTrue(count(after, "tent4j_control_auth_failures_total") >= 1, after);
        }
    }

    private static double count(String scrape, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*} (\\S+)$").matcher(scrape);
        assertTrue(m.find(), name + " missing in:\n" + scrape);
        return Double.parseDouble(m.group(1));
    }
}
