# asap2lab targets; include from the top Makefile (`include lab/lab.mk`) or run
# `make -f lab/lab.mk lab-up`. Paths are relative to the repository root.
LAB_DIR ?= lab
LAB_BASH ?= bash

.PHONY: lab-install lab-up lab-down lab-status

lab-install: ## install the lab's pinned Debian packages (idempotent, no prompts); LAB_RELEASE=epoxy also builds its Debian 13 root
	$(LAB_BASH) $(LAB_DIR)/install.sh
	if [ "$(LAB_RELEASE)" = epoxy ]; then $(LAB_BASH) $(LAB_DIR)/epoxy/build-rootfs.sh; fi

lab-up: ## bring the local lab up (idempotent; cleans a crashed lab first); LAB_RELEASE=zed|epoxy; LAB_K8S=1 adds its Kubernetes control plane (lab/kube)
	$(LAB_BASH) $(LAB_DIR)/up.sh

lab-down: ## tear the local lab down; leaves no process, netns, link or state behind
	$(LAB_BASH) $(LAB_DIR)/down.sh

lab-status: ## processes, namespaces and services of the local lab
	$(LAB_BASH) $(LAB_DIR)/status.sh
