// The standard build of the Scala shim: `sbt package` writes
// jvm-shim/target/scala-2.13/sparkext-shim_2.13-<version>.jar (tools/sbt.py runs sbt
// without an installed one; `make jar-sbt` copies the jar into the Python package).
// `make jar` builds the same jar offline with the Scala compiler pyspark ships.
//
// Spark is "provided" and must be exactly the Spark of the pinned pyspark wheel, so the
// shim compiles against the jars that wheel bundles (pyspark/jars): they are the same
// artifacts, they are already on the machine, and Spark releases reach PyPI before
// Maven Central mirrors. Set SPARKEXT_SPARK_JARS to use another folder of Spark jars.

ThisBuild / scalaVersion := "2.13.18" // pyspark 4.3.0's scala-library
ThisBuild / organization := "io.sparkext"
ThisBuild / version := "0.1.0"

lazy val sparkJars: File = sys.env.get("SPARKEXT_SPARK_JARS").map(file).getOrElse {
  val python = sys.env.getOrElse("PYTHON", ".venv/bin/python")
  val code = "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))"
  file(scala.sys.process.Process(Seq(python, "-c", code)).!!.trim)
}

lazy val shim = (project in file("jvm-shim"))
  .settings(
    name := "sparkext-shim",
    Compile / unmanagedJars ++= (sparkJars ** "*.jar").classpath,
    scalacOptions ++= Seq("-deprecation", "-feature", "-release", "17"),
  )

lazy val root = (project in file("."))
  .aggregate(shim)
  .settings(publish / skip := true)
