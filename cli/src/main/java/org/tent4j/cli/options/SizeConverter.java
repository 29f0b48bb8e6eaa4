package org.tent4j.cli.options;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ConfigValues;

import picocli.CommandLine;

/** Reads sizes the way engine config does ({@code 4096}, {@code 64k}, {@code 1m}, {@code 1MiB}, {@code 2g}). */
public final class SizeConverter implements CommandLine.ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
        try {
            return ConfigValues.parseSize("size", value);
        } catch (ConfigException e) {
            throw new CommandLine.TypeConversionException(
                    "expected a size such as 4096, 64k, 1m or 1g, got '" + value + "'");
        }
    }
}
