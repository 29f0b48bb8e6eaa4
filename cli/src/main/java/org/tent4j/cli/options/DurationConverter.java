package org.tent4j.cli.options;

import java.time.Duration;
import java.util.Locale;

import picocli.CommandLine;

/**
 * Reads durations as every tent4j command writes them: {@code 500ms}, {@code 10s}, {@code 1.5s}, {@code 2m}, or a
 * plain number of seconds ({@code 10}), as Mooncake's benchmarks count them.
 */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        String s = value.trim().toLowerCase(Locale.ROOT);
        try {
            if (s.endsWith("ms")) {
                return nonNegative(Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2))), value);
            }
            if (s.endsWith("m")) {
                return nonNegative(Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)) * 60), value);
            }
            String seconds = s.endsWith("s") ? s.substring(0, s.length() - 1) : s;
            double v = Double.parseDouble(seconds);
            if (!Double.isFinite(v)) {
                throw new NumberFormatException(value);
            }
            return nonNegative(Duration.ofNanos(Math.round(v * 1e9)), value);
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException(
                    "expected a duration such as 500ms, 10s, 2m or 10 (seconds), got '" + value + "'");
        }
    }

    private static Duration nonNegative(Duration d, String value) {
        if (d.isNegative()) {
            throw new CommandLine.TypeConversionException("a duration cannot be negative: '" + value + "'");
        }
        return d;
    }
}
