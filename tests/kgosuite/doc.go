// Package kgosuite runs franz-go's own kgo integration tests against kiggy.
package kgosuite
