{{/* Labels, as `pumice manifests deploy` writes them (names fixed, so a re-apply updates in place). */}}
{{- define "pumice.labels" -}}
app.kubernetes.io/name: pumice
app.kubernetes.io/component: scheduler-extender
app.kubernetes.io/part-of: pumice
{{- end -}}

{{- define "pumice.schedulerLabels" -}}
app.kubernetes.io/name: pumice-kube-scheduler
app.kubernetes.io/component: kube-scheduler
app.kubernetes.io/part-of: pumice
{{- end -}}

{{/* The target release as MAJOR.MINOR.PATCH (PATCH 0 when only MAJOR.MINOR is given). */}}
{{- define "pumice.kubeVersion" -}}
{{- $given := .Values.kubernetesVersion | default .Capabilities.KubeVersion.Version | toString | trimPrefix "v" -}}
{{- $parts := regexSplit "[.+-]" $given -1 -}}
{{- if lt (len $parts) 2 -}}
{{- fail (printf "kubernetesVersion %q is not MAJOR.MINOR[.PATCH]" $given) -}}
{{- end -}}
{{- $patch := "0" -}}
{{- if and (ge (len $parts) 3) (regexMatch "^[0-9]+$" (index $parts 2)) -}}{{- $patch = index $parts 2 -}}{{- end -}}
{{- printf "%s.%s.%s" (index $parts 0) (index $parts 1) $patch -}}
{{- end -}}

{{- define "pumice.kubeMinor" -}}
{{- $v := include "pumice.kubeVersion" . | splitList "." -}}
{{- if ne (index $v 0) "1" -}}{{- fail "only Kubernetes 1.x is supported" -}}{{- end -}}
{{- if lt (atoi (index $v 1)) 22 -}}
{{- fail (printf "Kubernetes %s is older than pumice supports (1.22 or later)" (include "pumice.kubeVersion" .)) -}}
{{- end -}}
{{- index $v 1 -}}
{{- end -}}

{{/* The newest KubeSchedulerConfiguration version the release reads: v1 from 1.25, v1beta3 in 1.23-1.24. */}}
{{- define "pumice.schedulerConfigApiVersion" -}}
{{- $minor := include "pumice.kubeMinor" . | atoi -}}
{{- if .Values.kubeScheduler.configApiVersion -}}{{ .Values.kubeScheduler.configApiVersion }}
{{- else if ge $minor 25 -}}kubescheduler.config.k8s.io/v1
{{- else if ge $minor 23 -}}kubescheduler.config.k8s.io/v1beta3
{{- else -}}kubescheduler.config.k8s.io/v1beta2
{{- end -}}
{{- end -}}

{{- define "pumice.schedulerImage" -}}
{{- .Values.kubeScheduler.image | default (printf "registry.k8s.io/kube-scheduler:v%s" (include "pumice.kubeVersion" .)) -}}
{{- end -}}

{{- define "pumice.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The webhook feature set of the release: see extender/deploy/chart_files.py. */}}
{{- define "pumice.webhookFeatures" -}}
{{- $minor := include "pumice.kubeMinor" . | atoi -}}
{{- if ge $minor 28 -}}conditions{{- else if ge $minor 27 -}}gates{{- else -}}basic{{- end -}}
{{- end -}}

{{/* A generated file with the release namespace and scheduler name in place of the generator's stand-ins. */}}
{{- define "pumice.generated" -}}
{{- .root.Files.Get .path | replace "pumice-chart-namespace" .root.Release.Namespace | replace "pumice-chart-scheduler-name" .root.Values.schedulerName -}}
{{- end -}}

{{/* The kube-scheduler configuration pumice's kube-scheduler reads (extender/deploy/scheduler_config.py). */}}
{{- define "pumice.schedulerConfig" -}}
{{- $scheme := ternary "https" "http" .Values.extender.mutualTLS -}}
{{- $extender := dict
  "urlPrefix" (printf "%s://pumice.%s.svc:8888" $scheme .Release.Namespace)
  "filterVerb" "filter"
  "prioritizeVerb" "prioritize"
  "preemptVerb" "preempt"
  "weight" 200
  "enableHTTPS" .Values.extender.mutualTLS
  "nodeCacheCapable" true
  "httpTimeout" "30s"
  "ignorable" false -}}
{{- if .Values.extender.mutualTLS -}}
{{- $_ := set $extender "tlsConfig" (dict "caFile" "/etc/pumice-extender-client/ca.crt" "certFile" "/etc/pumice-extender-client/tls.crt" "keyFile" "/etc/pumice-extender-client/tls.key") -}}
{{- end -}}
{{- $config := dict
  "apiVersion" (include "pumice.schedulerConfigApiVersion" .)
  "kind" "KubeSchedulerConfiguration"
  "clientConnection" (dict "qps" 500 "burst" 1000)
  "leaderElection" (dict "leaderElect" true "resourceName" "pumice-kube-scheduler" "resourceNamespace" .Release.Namespace)
  "percentageOfNodesToScore" 100
  "profiles" (list (dict "schedulerName" .Values.schedulerName))
  "extenders" (list $extender) -}}
{{- toYaml $config -}}
{{- end -}}
