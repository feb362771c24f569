{{/*
Names. The fullname is the release name (with "-pumice" unless it holds the chart's name), cut to 48
characters so "<fullname>-kube-scheduler" stays a DNS label. Release "pumice" gives the names
`pumice manifests deploy` prints, which tests/ops/test_helm_chart.py holds the chart to.
*/}}
{{- define "pumice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 48 | trimSuffix "-" -}}
{{- end -}}

{{- define "pumice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 48 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 48 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 48 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "pumice.schedulerFullname" -}}
{{- printf "%s-kube-scheduler" (include "pumice.fullname" .) -}}
{{- end -}}

{{/* Selector labels, as `pumice manifests deploy` writes them: a Deployment's selector never changes. */}}
{{- define "pumice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pumice.name" . }}
app.kubernetes.io/component: scheduler-extender
app.kubernetes.io/part-of: pumice
{{- end -}}

{{- define "pumice.schedulerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pumice.name" . }}-kube-scheduler
app.kubernetes.io/component: kube-scheduler
app.kubernetes.io/part-of: pumice
{{- end -}}

{{/* Object labels: the selector labels and extraLabels. */}}
{{- define "pumice.labels" -}}
{{ include "pumice.selectorLabels" . }}
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "pumice.schedulerLabels" -}}
{{ include "pumice.schedulerSelectorLabels" . }}
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of an object that belongs to neither Deployment. */}}
{{- define "pumice.partOfLabels" -}}
app.kubernetes.io/part-of: pumice
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The certificate contract's Secrets: <prefix>-ca, -webhook-tls, -extender-tls, -kube-scheduler-tls. */}}
{{- define "pumice.tlsPrefix" -}}
{{- include "pumice.fullname" . -}}
{{- end -}}

{{/* The DNS names of pumice's Service, which its serving certificates carry. */}}
{{- define "pumice.serviceDNSNames" -}}
{{- $svc := include "pumice.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- toYaml (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns)) -}}
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

{{/* A generated file with the release's namespace, names and scheduler name in place of the stand-ins. */}}
{{- define "pumice.generated" -}}
{{- .root.Files.Get .path
  | replace "pumice-chart-namespace" .root.Release.Namespace
  | replace "pumice-chart-fullname" (include "pumice.fullname" .root)
  | replace "pumice-chart-scheduler-name" .root.Values.schedulerName -}}
{{- end -}}

{{/*
A pod's scheduling constraints and placement: (dict "values" <pumice's or kubeScheduler's values>
"selector" <its selector labels as YAML>). Spread constraints without a labelSelector get the pods' own.
*/}}
{{- define "pumice.podPlacement" -}}
{{- $values := .values -}}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $values.topologySpreadConstraints }}
topologySpreadConstraints:
{{- range $values.topologySpreadConstraints }}
{{- $constraint := deepCopy . }}
{{- if not (hasKey $constraint "labelSelector") }}
{{- $_ := set $constraint "labelSelector" (dict "matchLabels" ($.selector | fromYaml)) }}
{{- end }}
- {{ toYaml $constraint | nindent 2 | trim }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The kube-scheduler configuration pumice's kube-scheduler reads (extender/deploy/scheduler_config.py). */}}
{{- define "pumice.schedulerConfig" -}}
{{- $scheme := ternary "https" "http" .Values.extender.mutualTLS -}}
{{- $extender := dict
  "urlPrefix" (printf "%s://%s.%s.svc:8888" $scheme (include "pumice.fullname" .) .Release.Namespace)
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
  "leaderElection" (dict "leaderElect" true "resourceName" (include "pumice.schedulerFullname" .) "resourceNamespace" .Release.Namespace)
  "percentageOfNodesToScore" 100
  "profiles" (list (dict "schedulerName" .Values.schedulerName))
  "extenders" (list $extender) -}}
{{- toYaml $config -}}
{{- end -}}
