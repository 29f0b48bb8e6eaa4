package org.tent4j.transport.mooncake;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;

/**
 * The plugin rule, checked where the plugin is built: the JDK (java.*, and jdk.net for the keep-alive timings a
 * socket takes), te-api and a logging facade, nothing else.
 */
class MooncakeBoundariesTest {

    @Test
    void pluginDependsOnTheApiOnly() {
        JavaClasses plugin = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("org.tent4j.transport.mooncake");
        classes().should().onlyDependOnClassesThat().resideInAnyPackage("java..", "jdk.net..", "org.tent4j.api..",
                        "org.tent4j.spi..", "org.slf4j..", "org.tent4j.transport.mooncake..")
                .because("a plugin compiles against te-api only; the runtime finds it through ServiceLoader")
                .check(plugin);
    }
}
