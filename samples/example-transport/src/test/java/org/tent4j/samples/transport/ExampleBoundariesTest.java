package org.tent4j.samples.transport;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;

/**
 * The rule every tent4j plugin lives by, checked on this one: its main code depends on the JDK, te-api and a logging
 * facade, nothing else (not the runtime, not te-testkit, not another plugin). A vendor copies this test as it is.
 */
class ExampleBoundariesTest {

    @Test
    void pluginDependsOnTheApiOnly() {
        JavaClasses plugin = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("org.tent4j.samples.transport");
        classes().should().onlyDependOnClassesThat().resideInAnyPackage("java..", "org.tent4j.api..",
                        "org.tent4j.spi..", "org.slf4j..", "org.tent4j.samples.transport..")
                .because("a plugin compiles against te-api only; the runtime finds it through ServiceLoader")
                .check(plugin);
    }
}
