package org.tent4j.cli.options;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

class DurationConverterTest {
    private final DurationConverter c = new DurationConverter();

    @Test
    void readsEveryUnitAndPlainSeconds() {
        assertEquals(Duration.ofMillis(500), c.convert("500ms"));
        assertEquals(Duration.ofSeconds(10), c.convert("10s"));
        assertEquals(Duration.ofMillis(1500), c.convert("1.5s"));
        assertEquals(Duration.ofMinutes(2), c.convert("2m"));
        assertEquals(Duration.ofSeconds(10), c.convert("10"), "a plain number is seconds, as in Mooncake's benches");
        assertEquals(Duration.ofMillis(300), c.convert("0.3"));
        assertEquals(Duration.ZERO, c.convert("0s"));
    }

    @Test
    void refusesWhatIsNotADuration() {
        for (String bad : new String[]{"soon", "", "10h", "-1s", "NaN", "1e400"}) {
            CommandLine.TypeConversionException e = assertThrows(CommandLine.TypeConversionException.class,
                    () -> c.convert(bad), bad);
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
        }
    }
}
